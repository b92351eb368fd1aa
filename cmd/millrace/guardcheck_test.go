package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
)

// guard check --policy applies the policy's rules: a session idle in
// transaction longer than its class's max_idle_in_transaction is
// CRITICAL (the class's action is cancel), though the age thresholds
// (5m, 30m) say OK; check signals nothing. Before, check read only the
// policy's watch_tables and answered OK.
func TestGuardCheckAppliesPolicy(t *testing.T) {
	ctx := context.Background()
	u := testkit.EmptyDBURL(t)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("classes:\n  - name: reports\n    match:\n      application_name: reports\n    max_idle_in_transaction: 1s\n    action: cancel\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "reports"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	pid := holder.PgConn().PID()
	code, out, errs := millrace(t, "guard", "check", "--policy", policy, "--database-url", u)
	if code != 0 || !strings.HasPrefix(out, "OK: ") {
		t.Fatalf("guard check with no transaction open: exit %d %q %q", code, out, errs)
	}
	if _, err := holder.Exec(ctx, "BEGIN; SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}
	watcher, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	idleFor := func() time.Duration {
		var s float64
		watcher.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM clock_timestamp() - state_change), 0)::float8
			FROM pg_stat_activity WHERE pid = $1 AND state = 'idle in transaction'`, pid).Scan(&s)
		return time.Duration(s * float64(time.Second))
	}
	testkit.WaitFor(t, "the session idle in transaction past 1s", 30*time.Second, func() bool { return idleFor() > 1200*time.Millisecond })
	code, out, errs = millrace(t, "guard", "check", "--policy", policy, "--database-url", u)
	want := fmt.Sprintf("CRITICAL: session pid %d (class reports) breaks max_idle_in_transaction: idle in transaction for ", pid)
	if code != 2 || !strings.HasPrefix(out, want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("guard check with a member idle past its rule: exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", code, out, errs, want)
	}
	if idleFor() == 0 {
		t.Error("guard check ended the session it reported")
	}
}
