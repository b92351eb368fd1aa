package pgcluster_test

import (
	"context"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millracetest/pgcluster"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestClusterStartQueryStop(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: the harness's own cluster is not used")
	}
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: map[string]string{"work_mem": "'7MB'"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var wm string
	if err := conn.QueryRow(ctx, "SHOW work_mem").Scan(&wm); err != nil {
		t.Fatal(err)
	}
	if wm != "7MB" {
		t.Errorf("work_mem = %q, want the setting passed in (7MB)", wm)
	}
	conn.Close(ctx)
	pid := c.PID()
	dir := c.Dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data dir %s still exists after Stop", dir)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("postmaster %d still running after Stop", pid)
	}
}

func TestStandbyFeedbackPinsPrimary(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: standby tests need the harness's own cluster")
	}
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	s := testkit.AddStandby(t, c, pgcluster.Options{})
	sconn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var inRecovery bool
	sconn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
	if !inRecovery {
		t.Fatal("standby is not in recovery")
	}
	// A REPEATABLE READ snapshot on the standby must show up as the
	// standby's backend_xmin on the primary (hot_standby_feedback).
	tx, err := sconn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(ctx, "SELECT 1")
	pconn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close(ctx)
	// Burn some xids on the primary so that a held xmin has an age.
	for i := 0; i < 20; i++ {
		pconn.Exec(ctx, "SELECT pg_current_xact_id()")
	}
	testkit.WaitFor(t, "the primary to see the standby's feedback xmin age", 10*time.Second, func() bool {
		var age *int
		pconn.QueryRow(ctx, "SELECT max(age(backend_xmin)) FROM pg_stat_replication").Scan(&age)
		return age != nil && *age >= 10
	})
	tx.Rollback(ctx)
	sconn.Close(ctx)
	spid := s.PID()
	s.Stop()
	if syscall.Kill(spid, 0) == nil {
		t.Errorf("standby %d still running after Stop", spid)
	}
}

// TestServerDiesWithParent checks that a cluster does not outlive the process
// that started it, even when that process is killed without cleanup.
func TestServerDiesWithParent(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set")
	}
	if os.Getenv("PGCLUSTER_CHILD") == "1" {
		c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(c.PID()) + "\n")
		// Hang until the parent kills this process, without cleanup. The
		// parent holds stdin open; were it to die first, the end of stdin
		// ends this process.
		io.Copy(io.Discard, os.Stdin)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithParent$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_CHILD=1")
	in, err := cmd.StdinPipe() // closed by Wait, after the kill
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(string(buf[:n-1]))
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("child did not report a postmaster pid: %q", buf[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !testkit.Until(15*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("postmaster %d outlived its killed parent", pid)
	}
}

// Under MILLRACE_PG the cluster is a server of that major version, the
// machine's own or a fetched build.
func TestClusterIsTheVersionAskedFor(t *testing.T) {
	major, err := pgcluster.Major()
	if err != nil {
		t.Fatal(err)
	}
	if major == 0 || os.Getenv("DATABASE_URL") != "" {
		t.Skip("MILLRACE_PG unset")
	}
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	if num/10000 != major {
		t.Errorf("server_version_num %d, want major %d (MILLRACE_PG)", num, major)
	}
}
