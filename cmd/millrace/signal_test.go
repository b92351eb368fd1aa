package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
)

// Ctrl-C during a command that waits (migrate up, blocked on the
// migration lock another session holds) exits 130 with one short line,
// not "context canceled".
func TestInterruptExitsQuietly(t *testing.T) {
	ctx := context.Background()
	u := testkit.EmptyDBURL(t)
	holder, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock(1836216679)"); err != nil { // schema's migrateLock
		t.Fatal(err)
	}
	a, _ := json.Marshal([]string{"migrate", "up", "--database-url", u})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MILLRACE_ARGS="+string(a), "DATABASE_URL=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	testkit.WaitFor(t, "migrate up waiting for the migration lock", 30*time.Second, func() bool {
		var n int
		holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`).Scan(&n)
		return n > 0
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("migrate up interrupted: %v, want exit 130", err)
	}
	// (Before it, migrate up may have warned that it runs as a superuser.)
	if got := errb.String(); !strings.HasSuffix(got, "\nmillrace migrate: interrupted\n") && got != "millrace migrate: interrupted\n" || strings.Contains(got, "context canceled") {
		t.Errorf("migrate up interrupted: stderr %q, want it to end with one line: millrace migrate: interrupted", got)
	}
}
