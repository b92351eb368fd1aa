// Package pgcluster starts throwaway PostgreSQL clusters from the local
// server binaries, for tests, examples and benchmarks: a temp dir, a free
// port, trust authentication on 127.0.0.1, the settings the caller passes,
// torn down on Stop. It needs no running server and does not import
// testing, so a program (examples/quickstart) can use it as well as a
// test. When run as root, initdb and postgres run as the "postgres" OS
// user, since PostgreSQL refuses to run as root.
//
//	cluster, err := pgcluster.Start(ctx, pgcluster.Options{})
//	if err != nil { ... }
//	defer cluster.Stop()
//	pool, err := pgxpool.New(ctx, cluster.URL("postgres"))
//
// The server binaries are found with pg_config --bindir, or in the newest
// /usr/lib/postgresql/*/bin (Debian/Ubuntu: apt-get install postgresql);
// MILLRACE_PG=<major> asks for one major version (14 to 18), and a
// version the machine lacks is fetched once, checksum-verified, from
// Maven Central's published server builds (BinDir, Fetch).
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultSettings are the server settings every cluster starts with unless
// overridden: sized for a 2-core machine with a few hundred connections, WAL
// ready for a streaming standby, and stats flushed promptly.
var DefaultSettings = map[string]string{
	"max_connections":           "300",
	"shared_buffers":            "256MB",
	"wal_level":                 "replica",
	"max_wal_senders":           "5",
	"max_replication_slots":     "5",
	"max_prepared_transactions": "10",
	// Sessions that loop millrace's reads at a SERIALIZABLE default take
	// one predicate lock per partition they read (docs/deploy.md): eight
	// of them held up to 13,671 at once on PostgreSQL 17, and 64 a
	// transaction (19,200 here) ran out of shared memory now and then.
	"max_pred_locks_per_transaction": "256",
	"fsync":                          "on",
	"synchronous_commit":             "on",
	"logging_collector":              "off",
	"log_min_messages":               "warning",
	"listen_addresses":               "'127.0.0.1'",
	"unix_socket_directories":        "''",
}

// Options configure a cluster.
type Options struct {
	// Settings override DefaultSettings (values are written as given into
	// postgresql.conf, so strings need their own quotes).
	Settings map[string]string
	// Log receives the server's stderr; nil discards it.
	Log *os.File
	// Parent is the directory the cluster's temp directory is made in
	// ("": os.TempDir()). A test harness passes a RAM-backed one (see
	// RAMDir).
	Parent string
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	Dir  string // the temp directory holding the data directory
	Port int

	bindir  string
	data    string
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	stopped bool
	cred    *syscall.Credential
	parent  string // Options.Parent: standbys go beside the cluster
}

// BinDir finds the PostgreSQL server binaries. With MILLRACE_PG=<major>
// set: the machine's binaries of that major version (pg_config --bindir,
// /usr/lib/postgresql/<major>/bin), else the pinned build of it, fetched
// once into CacheDir (Fetch). Unset: pg_config --bindir, then the newest
// /usr/lib/postgresql/*/bin that has initdb, and on a machine with
// neither the pinned build of DefaultMajor. A fetch reports its progress
// on stderr.
func BinDir() (string, error) { return binDir(context.Background()) }

func binDir(ctx context.Context) (string, error) {
	major, err := Major()
	if err != nil {
		return "", err
	}
	if major != 0 {
		if dir := systemBinDir(major); dir != "" {
			return dir, nil
		}
		return Fetch(ctx, major, os.Stderr)
	}
	if dir := pgConfigBinDir(); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	dir, err := Fetch(ctx, DefaultMajor, os.Stderr)
	if err != nil {
		return "", fmt.Errorf("pgcluster: no PostgreSQL server binaries on this machine (pg_config --bindir, /usr/lib/postgresql/*/bin), and %w; install postgresql or set DATABASE_URL", err)
	}
	return dir, nil
}

// pgConfigBinDir is what pg_config --bindir says, or "".
func pgConfigBinDir() string {
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func versionOf(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// Start creates and starts a new cluster. The caller must Stop it.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bindir, err := binDir(ctx)
	if err != nil {
		return nil, err
	}
	sweepStale(opts.Parent)
	dir, err := os.MkdirTemp(opts.Parent, "millrace-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bindir: bindir, data: filepath.Join(dir, "data"), parent: opts.Parent}
	if err := c.setOwner(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.run(ctx, "initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.startServer(ctx, c.data, opts, nil); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// setOwner prepares the temp dir for the postgres OS user when running as root.
func (c *Cluster) setOwner() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("pgcluster: running as root needs a 'postgres' OS user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		return err
	}
	return os.Chown(c.Dir, uid, gid)
}

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if !filepath.IsAbs(name) {
		name = filepath.Join(c.bindir, name)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setpgid: true}
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	out, err := c.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgcluster: %s: %w\n%s", name, err, out)
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free when asked (for a
// server a test starts beside the cluster, such as a connection pooler).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeSettings(path string, base map[string]string, over ...map[string]string) error {
	all := map[string]string{}
	for k, v := range base {
		all[k] = v
	}
	for _, m := range over {
		for k, v := range m {
			all[k] = v
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n# written by millrace pgcluster\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, all[k])
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}

// startServer writes settings, starts postgres on a free port and waits
// until it accepts connections.
func (c *Cluster) startServer(ctx context.Context, data string, opts Options, extra map[string]string) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		if err := writeSettings(filepath.Join(data, "postgresql.auto.conf"), DefaultSettings, opts.Settings, extra, map[string]string{"port": strconv.Itoa(port)}); err != nil {
			return err
		}
		// Not bound to ctx: the server outlives the start call and is
		// stopped by Stop. Pdeathsig ends it if this process dies.
		cmd := c.command(context.Background(), "postgres", "-D", data)
		cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
		if opts.Log != nil {
			cmd.Stderr = opts.Log
			cmd.Stdout = opts.Log
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("pgcluster: start postgres: %w", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		c.cmd, c.exited, c.Port = cmd, exited, port
		if lastErr = c.waitReady(ctx); lastErr == nil {
			return nil
		}
		c.kill()
	}
	return lastErr
}

func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("pgcluster: postgres exited during startup (port %d)", c.Port)
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pgcluster: postgres not ready: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL returns a connection string for database db as the postgres superuser.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// CreateDatabase creates a database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// PID returns the postmaster's process id.
func (c *Cluster) PID() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

func (c *Cluster) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		// SIGQUIT is an immediate shutdown; the process group takes the
		// children down with the postmaster.
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGQUIT)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
		}
	}
}

// Stop shuts the server down at once and removes its directory. It is safe
// to call more than once and from several goroutines.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	c.kill()
	return os.RemoveAll(c.Dir)
}

// Restart stops the server abruptly (as a crash would) and starts it again
// on the same port, for tests of what survives a Postgres restart.
func (c *Cluster) Restart(ctx context.Context, opts Options) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kill()
	port := c.Port
	if err := writeSettings(filepath.Join(c.data, "postgresql.auto.conf"), nil, map[string]string{"port": strconv.Itoa(port)}); err != nil {
		return err
	}
	cmd := c.command(context.Background(), "postgres", "-D", c.data)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if opts.Log != nil {
		cmd.Stderr, cmd.Stdout = opts.Log, opts.Log
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c.cmd, c.exited = cmd, exited
	return c.waitReady(ctx)
}

// Standby is a streaming hot standby of a Cluster, with hot_standby_feedback
// on, so that its readers hold back the primary's horizon.
type Standby struct {
	*Cluster
}

// ErrNoBaseBackup is AddStandby's error when no pg_basebackup able to copy
// the cluster is at hand: the fetched server builds hold only initdb,
// pg_ctl and postgres, and pg_basebackup copies servers of its own major
// version or older.
var ErrNoBaseBackup = errors.New("pgcluster: no pg_basebackup for this server's version")

// BaseBackup returns the pg_basebackup AddStandby would copy a cluster of
// BinDir's server with, or an error wrapping ErrNoBaseBackup when there is
// none: a caller can tell beforehand whether a standby can be made.
func BaseBackup() (string, error) {
	bindir, err := BinDir()
	if err != nil {
		return "", err
	}
	return baseBackupTool(bindir)
}

func (c *Cluster) baseBackupTool() (string, error) { return baseBackupTool(c.bindir) }

// baseBackupTool returns the pg_basebackup to copy a server of bindir
// with: the one beside it, else the machine's own when it is of the
// server's major version or newer.
func baseBackupTool(bindir string) (string, error) {
	own := filepath.Join(bindir, "pg_basebackup")
	if _, err := os.Stat(own); err == nil {
		return own, nil
	}
	major := serverMajor(bindir)
	if dir := pgConfigBinDir(); dir != "" && serverMajor(dir) >= major {
		if _, err := os.Stat(filepath.Join(dir, "pg_basebackup")); err == nil {
			return filepath.Join(dir, "pg_basebackup"), nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_basebackup")
	for _, m := range matches {
		if versionOf(m) >= major {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w (PostgreSQL %d in %s)", ErrNoBaseBackup, major, bindir)
}

// AddStandby takes a base backup of c and starts it as a hot standby with
// hot_standby_feedback=on. It returns once the standby accepts connections
// and is streaming. The caller must Stop it (before or after the primary).
func (c *Cluster) AddStandby(ctx context.Context, opts Options) (*Standby, error) {
	dir, err := os.MkdirTemp(c.parent, "millrace-pg-standby-")
	if err != nil {
		return nil, err
	}
	s := &Cluster{Dir: dir, bindir: c.bindir, data: filepath.Join(dir, "data"), parent: c.parent}
	if err := s.setOwner(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	basebackup, err := c.baseBackupTool()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.run(ctx, basebackup, "-D", s.data, "-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", c.Port),
		"-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	extra := map[string]string{"hot_standby": "on", "hot_standby_feedback": "on", "wal_receiver_status_interval": "1s"}
	if err := s.startServer(ctx, s.data, opts, extra); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Wait until the primary sees it streaming.
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		s.Stop()
		return nil, err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").Scan(&n); err != nil {
			s.Stop()
			return nil, err
		}
		if n > 0 {
			return &Standby{s}, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("pgcluster: standby did not start streaming within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweepStale removes the directories of clusters whose server is gone (a
// process killed before it could clean up: its server died with it, by
// Pdeathsig, but the directory stayed), in parent ("": os.TempDir()).
func sweepStale(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "millrace-pg-*"))
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil || time.Since(info.ModTime()) < time.Minute {
			continue // too young: may be starting right now
		}
		pidFile := filepath.Join(dir, "data", "postmaster.pid")
		if b, err := os.ReadFile(pidFile); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && syscall.Kill(pid, 0) == nil {
				continue // its server is still running
			}
		}
		os.RemoveAll(dir)
	}
}

// RAMDir returns a RAM-backed directory (a tmpfs) with at least minFree
// bytes free, for a throwaway cluster's files, or "" when there is none.
// Creating and dropping databases creates and unlinks thousands of files;
// on a disk file system that costs the kernel more than PostgreSQL's own
// work (a quarter of a test suite's CPU time on ext4 here), on a tmpfs
// little. Only Linux's /dev/shm is looked at.
func RAMDir(minFree uint64) string {
	const dir = "/dev/shm"
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || int64(fs.Type) != tmpfsMagic {
		return ""
	}
	if fs.Bavail*uint64(fs.Bsize) < minFree {
		return ""
	}
	f, err := os.CreateTemp(dir, "millrace-probe-")
	if err != nil {
		return "" // not writable by this user
	}
	f.Close()
	os.Remove(f.Name())
	return dir
}

// tmpfsMagic is the file system type of a tmpfs (TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// WithDatabase returns u with its database name replaced by db.
func WithDatabase(u, db string) string {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme == "" {
		// keyword/value form
		return u + " dbname=" + db
	}
	parsed.Path = "/" + db
	return parsed.String()
}
