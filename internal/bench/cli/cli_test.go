package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

// The test binary doubles as the millrace binary for TestInterrupt.
func TestMain(m *testing.M) {
	bench.ChildMain() // a worker process of the chaos scenario
	if args := os.Getenv("MILLRACE_CLI_TEST_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := Bench(ctx, strings.Fields(args)); err != nil {
			var e *Error
			if errors.As(err, &e) {
				os.Exit(e.Code)
			}
			os.Exit(1)
		}
		os.Exit(0)
	}
	testkit.Main(m)
}

// TestFlagErrors checks that bad input is refused with exit status 2 and a
// message naming the problem, before anything starts.
func TestFlagErrors(t *testing.T) {
	cases := map[string]string{
		"--rate abc":                        `--rate "abc"`,
		"--rate -5":                         `--rate "-5"`,
		"--strategies skiplocked,nope":      `unknown strategy "nope"`,
		"--scenario nope":                   `unknown scenario "nope"`,
		"--scenario burndown":               "needs --jobs",
		"--workers 4 extra":                 `unexpected argument "extra"`,
		"--guard /nonexistent/policy.yaml":  "policy.yaml",
		"--work 5parsecs":                   `--work "5parsecs": not a duration`,
		"--processes 0":                     "--processes 0",
		"--processes 8 --workers 4":         "more than --workers 4",
		"--scenario stall --strategies que": `"que" cannot run the stall scenario`,
		"--scenario chaos --strategies skiplocked --processes 2":           `"skiplocked" cannot run the chaos scenario`,
		"--scenario chaos --strategies millrace":                           "needs --processes 2 or more",
		"--scenario chaos --strategies millrace --processes 4 --rate max":  "needs a paced producer",
		"--scenario chaos --strategies millrace --processes 4 --stress 0s": "needs a stress phase",
		"--mix fial=5":                  `unknown key "fial"`,
		"--mix fail=abc":                `fail="abc": want a whole percentage`,
		"--mix fail=60,sched=50":        "add up to 110, more than 100",
		"--mix fail=5 --strategies que": `"que" cannot run --mix`,
		"--mix fail=5 --strategies millrace --scenario burndown --jobs 100": "--mix needs a producer that runs with the workers",
		"--scenario standby --database-url postgres://127.0.0.1:1/x":        "needs --standby-url",
		"--scenario analytics --readers 0":                                  "--readers 0: want at least 1",
		"--readers -2 --scenario analytics":                                 "--readers -2: want at least 1",
		"--scenario analytics --reader-duration 0s":                         "--reader-duration 0s: want a positive duration",
		"--scenario analytics --reader-interval -5s":                        "--reader-interval -5s: want a positive duration",
		"--scenario analytics --reader-duration soon":                       `--reader-duration "soon": not a duration`,
		"--stress 10": "--stress 10: use a unit, e.g. 10s",
		"--scenario analytics --stress 5m --reader-duration 6m":   "--reader-duration 6m0s is longer than --stress 5m0s",
		"--reader-duration 30s --stress 20s --scenario analytics": "is longer than --stress",
		"--readers 3": "--readers applies to the analytics scenario only",
		"--scenario idle-xid --reader-interval 10s": "--reader-interval applies to the analytics scenario only",
		"--reader-readonly --scenario clean":        "--reader-readonly applies to the analytics scenario only",
		"--pg-setting statement_timeout":            "want NAME=VALUE",
		"--pg-setting Bad-Name=1":                   "want NAME=VALUE",
		"--pooler pgpool":                           `--pooler "pgpool": want pgbouncer-transaction`,
		// Repeated --limit flags add up: a part given in two is refused.
		"--limit running=40 --limit per-key=2,key=customer_id --limit running=20": "running given twice",
		"--pooler pgbouncer-transaction --strategies skiplocked":                  "runs the millrace strategy only, not skiplocked",
	}
	for args, want := range cases {
		err := Bench(context.Background(), strings.Fields(args))
		var e *Error
		if !errors.As(err, &e) || e.Code != 2 || !strings.Contains(e.Msg, want) {
			t.Errorf("bench %s: got %v, want exit 2 with %q", args, err, want)
		} else if strings.Contains(e.Msg, "\n") {
			t.Errorf("bench %s: the error spans lines: %q", args, e.Msg)
		}
	}
}

// TestInterrupt runs the standby scenario on the embedded cluster, sends
// Ctrl-C during the stress phase and checks that the bench exits 130 and
// leaves no cluster, standby or process behind.
func TestInterrupt(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL is set: this test needs the embedded cluster and its standby")
	}
	if _, err := pgcluster.BaseBackup(); errors.Is(err, pgcluster.ErrNoBaseBackup) && (os.Getenv("CI") != "true" || os.Getenv("MILLRACE_PG") != "") {
		t.Skipf("the standby scenario needs pg_basebackup: %v", err)
	}
	tmp, err := os.MkdirTemp("", "millrace-cli-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // the postgres OS user must reach its cluster dir
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "MILLRACE_CLI_TEST_ARGS=--scenario standby --strategies skiplocked --rate 100 --workers 2 --warmup 0s --clean 2s --stress 60s --recovery 5s --out "+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var seen []string
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), " stress ") && strings.Contains(lines.Text(), "xmin held") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130; output:\n%s", err, strings.Join(seen, "\n"))
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "millrace-pg-*")); len(left) > 0 {
		t.Errorf("cluster directories left behind: %v", left)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), tmp) {
			t.Errorf("process left behind: %s: %q", p, b)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || !strings.Contains(string(b), `"interrupted": true`) || !strings.Contains(string(b), `"stress": {`) {
		t.Errorf("an interrupted run's summary.json: want it marked interrupted, with the stress phase: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("no partial report: %v", err)
	}
}

// userData is everything of the user's database the bench must leave as
// it was: its schemas and relations, the queue's live jobs and history
// rows, and every sequence's position.
func userData(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT n.nspname || '.' || c.relname || ' ' || c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1`,
		`SELECT format('%s %s %s %s %s %s', id, queue, kind, state, attempt, args) FROM millrace.jobs ORDER BY id, state`,
		`SELECT format('%s %s %s %s %s %s', id, queue, state, attempt, finished_at, error) FROM millrace.history ORDER BY id, attempt`,
		`SELECT format('%s.%s %s', schemaname, sequencename, last_value) FROM pg_sequences ORDER BY 1`,
	} {
		rows, err := pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(lines, "\n") + "\n--\n")
	}
	return b.String()
}

// benchDatabases lists the databases the bench created and left behind.
func benchDatabases(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := pool.Query(context.Background(), "SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1", DatabasePrefix+"%")
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestBenchLeavesUserDataAlone runs the bench on a server given by URL
// whose database holds an application's queue (jobs waiting, scheduled,
// discarded, cancelled): every strategy, a pinning scenario and a guard,
// then a run interrupted in the middle. The user's jobs, history rows and
// id sequences stay exactly as they were, and the bench leaves no database
// of its own behind.
func TestBenchLeavesUserDataAlone(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	testkit.Enqueue(t, pool, "email.send", "default", `{"to":"ada@example.com"}`, 0)
	testkit.Enqueue(t, pool, "report", "reports", `{}`, time.Hour)
	c := testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	if _, err := pool.Exec(ctx, "SELECT millrace.cancel($1)", c); err != nil {
		t.Fatal(err)
	}
	clientkit.Discard(t, pool, "default", "image cat.png: unsupported format")
	before := userData(t, pool)
	policy, err := filepath.Abs("../../../examples/analytics-budget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"--database-url", u, "--rate", "50", "--workers", "2", "--warmup", "0s", "--recovery", "0s"}

	out := t.TempDir()
	args := append([]string{"--strategies", strings.Join(bench.Names(), ","), "--scenario", "idle-xid",
		"--clean", "0s", "--stress", "1s", "--guard", policy, "--out", out}, common...)
	if err := Bench(ctx, args); err != nil {
		t.Fatalf("bench %s: %v", strings.Join(args, " "), err)
	}
	if after := userData(t, pool); after != before {
		t.Fatalf("the bench changed the user's database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if left := benchDatabases(t, pool); len(left) > 0 {
		t.Fatalf("the bench left its databases behind: %v", left)
	}

	// Interrupted once the millrace strategy's schema is in place, jobs
	// flow and the sampler has written a sample of the clean phase.
	out = t.TempDir()
	ictx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	go func() {
		defer interrupt()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			b, _ := os.ReadFile(filepath.Join(out, "timeseries.jsonl"))
			if strings.Contains(string(b), `"phase":"clean"`) {
				return
			}
		}
	}()
	args = append([]string{"--strategies", "millrace,skiplocked", "--scenario", "clean", "--clean", "10m", "--out", out}, common...)
	err = Bench(ictx, args)
	var e *Error
	if !errors.As(err, &e) || e.Code != 130 {
		t.Fatalf("interrupted bench: %v, want exit 130", err)
	}
	if after := userData(t, pool); after != before {
		t.Fatalf("the interrupted bench changed the user's database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if left := benchDatabases(t, pool); len(left) > 0 {
		t.Fatalf("the interrupted bench left its databases behind: %v", left)
	}
	// The interrupted run's summary: marked so, with the phase that ran.
	var sum bench.Summary
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("the interrupted run's summary.json: %v\n%s", err, b)
	}
	if ss := sum.Strategies["millrace"]; !sum.Interrupted || ss == nil || ss.Phases["clean"] == nil || ss.Phases["clean"].Seconds < 1 || sum.Strategies["skiplocked"] != nil {
		t.Errorf("the interrupted run's summary.json: want interrupted, millrace's clean phase and no skiplocked:\n%s", b)
	}
}

// TestBenchNeedsCreateDB: a role that may not create databases is refused
// in one line naming the privilege, before anything is touched.
func TestBenchNeedsCreateDB(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	role := fmt.Sprintf("bench_nocreatedb_%d", os.Getpid())
	if _, err := pool.Exec(ctx, "CREATE ROLE "+role+" LOGIN NOCREATEDB"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), "DROP ROLE "+role) })
	before := userData(t, pool)
	nu := strings.Replace(u, "postgres://postgres@", "postgres://"+role+"@", 1)
	if nu == u {
		t.Skipf("cannot put another role into %s", u)
	}
	err := Bench(ctx, []string{"--database-url", nu, "--strategies", "millrace", "--scenario", "clean", "--warmup", "0s", "--clean", "1s",
		"--stress", "0s", "--recovery", "0s", "--out", t.TempDir()})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "CREATEDB") || strings.Contains(e.Msg, "\n") {
		t.Fatalf("bench as a role without CREATEDB: %v; want one line naming CREATEDB", err)
	}
	if after := userData(t, pool); after != before {
		t.Fatalf("the refused bench changed the user's database")
	}
	if left := benchDatabases(t, pool); len(left) > 0 {
		t.Fatalf("databases created: %v", left)
	}
}

// TestBenchEnvironment runs the millrace strategy under server settings a
// deployment may have (--pg-setting) through PgBouncer in transaction mode
// (--pooler): every job completes once, and the summary names the
// environment. A setting the server does not know is refused in one line.
func TestBenchEnvironment(t *testing.T) {
	if _, err := testkit.PgBouncerBin(); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	u := testkit.DBURL(t)
	ctx := context.Background()
	common := []string{"--database-url", u, "--strategies", "millrace", "--scenario", "clean", "--rate", "100", "--workers", "4",
		"--warmup", "0s", "--clean", "3s", "--stress", "0s", "--recovery", "0s"}
	err := Bench(ctx, append([]string{"--pg-setting", "no_such_setting=1", "--out", t.TempDir()}, common...))
	var e *Error
	if !errors.As(err, &e) || e.Code != 2 || !strings.Contains(e.Msg, `the server has no setting "no_such_setting"`) {
		t.Fatalf("an unknown setting: got %v, want exit 2 naming it", err)
	}
	out := t.TempDir()
	args := append([]string{"--pg-setting", "default_transaction_isolation=serializable", "--pg-setting", "idle_session_timeout=5s",
		"--pooler", "pgbouncer-transaction", "--out", out}, common...)
	if err := Bench(ctx, args); err != nil {
		t.Fatalf("bench %s: %v", strings.Join(args, " "), err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum bench.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Pooler != "pgbouncer-transaction" || !slices.Equal(sum.PGSettings, []string{"default_transaction_isolation=serializable", "idle_session_timeout=5s"}) {
		t.Errorf("summary: pooler %q, settings %q", sum.Pooler, sum.PGSettings)
	}
	ss := sum.Strategies["millrace"]
	if ss == nil || ss.Totals == nil || ss.Totals.Completed == 0 || ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Fatalf("millrace under the environment: %+v", ss)
	}
}
