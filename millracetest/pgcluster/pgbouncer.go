package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PgBouncer is a running PgBouncer in front of a PostgreSQL server, for
// tests of the client through a connection pooler.
type PgBouncer struct {
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// PgBouncerOptions configure a PgBouncer.
type PgBouncerOptions struct {
	// PoolMode is session, transaction or statement (default transaction).
	PoolMode string
	// Users may log in through it (auth_type trust: PgBouncer still needs
	// each user name in its auth file). The user of target is always one.
	Users []string
	// PoolSize is the number of server connections per database and user
	// (default 10).
	PoolSize int
	// Settings are more lines of the [pgbouncer] section (name = value).
	Settings map[string]string
}

// PgBouncerBin finds the pgbouncer binary (PATH, then /usr/sbin).
func PgBouncerBin() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("pgcluster: pgbouncer not found (install the pgbouncer package; .ci/run does)")
}

// StartPgBouncer starts PgBouncer on a free loopback port in front of the
// server of target (a postgres:// URL), every database passed through.
// As root it runs as the postgres OS user (PgBouncer refuses root). The
// caller must Stop it.
func StartPgBouncer(ctx context.Context, target string, opts PgBouncerOptions) (*PgBouncer, error) {
	bin, err := PgBouncerBin()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("pgcluster: pgbouncer needs a postgres:// URL, got %q", target)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	if opts.PoolMode == "" {
		opts.PoolMode = "transaction"
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = 10
	}
	dir, err := os.MkdirTemp("", "millrace-pgbouncer-")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		pu, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: running pgbouncer as root needs a 'postgres' OS user: %w", err)
		}
		uid, _ := strconv.Atoi(pu.Uid)
		gid, _ := strconv.Atoi(pu.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	users := append([]string{u.User.Username()}, opts.Users...)
	var auth strings.Builder
	for _, name := range users {
		fmt.Fprintf(&auth, "%q \"\"\n", name)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(auth.String()), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		listen, err := FreePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		settings := map[string]string{
			"listen_addr":        "127.0.0.1",
			"listen_port":        strconv.Itoa(listen),
			"unix_socket_dir":    "",
			"auth_type":          "trust",
			"auth_file":          filepath.Join(dir, "users.txt"),
			"pool_mode":          opts.PoolMode,
			"default_pool_size":  strconv.Itoa(opts.PoolSize),
			"max_client_conn":    "1000",
			"logfile":            filepath.Join(dir, "pgbouncer.log"),
			"pidfile":            filepath.Join(dir, "pgbouncer.pid"),
			"server_login_retry": "1",
		}
		for k, v := range opts.Settings {
			settings[k] = v
		}
		var ini strings.Builder
		fmt.Fprintf(&ini, "[databases]\n* = host=%s port=%s\n\n[pgbouncer]\n", host, port)
		for k, v := range settings {
			fmt.Fprintf(&ini, "%s = %s\n", k, v)
		}
		conf := filepath.Join(dir, "pgbouncer.ini")
		if err := os.WriteFile(conf, []byte(ini.String()), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cmd := exec.Command(bin, conf)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: start pgbouncer: %w", err)
		}
		b := &PgBouncer{Port: listen, dir: dir, cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); close(b.done) }()
		if lastErr = b.waitListening(ctx); lastErr == nil {
			return b, nil
		}
		b.kill()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
	os.RemoveAll(dir)
	return nil, fmt.Errorf("%w\n%s", lastErr, log)
}

func (b *PgBouncer) waitListening(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-b.done:
			return errors.New("pgcluster: pgbouncer exited during startup")
		default:
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pgcluster: pgbouncer not listening: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL returns target with its host and port replaced by the pooler's.
func (b *PgBouncer) URL(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	return u.String()
}

// Log returns what PgBouncer logged so far.
func (b *PgBouncer) Log() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	return string(out)
}

func (b *PgBouncer) kill() {
	if b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
}

// Stop stops PgBouncer at once and removes its directory.
func (b *PgBouncer) Stop() {
	b.kill()
	os.RemoveAll(b.dir)
}
