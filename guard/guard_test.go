package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// detectWithin is how quickly every holder must be found.
const detectWithin = 2 * time.Second

func guardPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// connect opens a session with the given application_name.
func connect(t *testing.T, url, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if app != "" {
		cfg.RuntimeParams["application_name"] = app
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, s := range sqls {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func pid(conn *pgx.Conn) int { return int(conn.PgConn().PID()) }

// burn consumes n transaction ids so that held xmins have an age.
func burn(t *testing.T, url string, n int) {
	t.Helper()
	conn := connect(t, url, "burner")
	for i := 0; i < n; i++ {
		exec(t, conn, "SELECT pg_current_xact_id()")
	}
	conn.Close(context.Background())
}

// waitHolder discovers until pred matches a holder, failing after
// detectWithin. It returns the holder and the time it took.
func waitHolder(t *testing.T, g *Guard, what string, pred func(*Holder) bool) (*Holder, time.Duration) {
	t.Helper()
	return waitHolderWithin(t, g, what, detectWithin, pred)
}

// waitHolderWithin is waitHolder with its own bound, for a condition that
// takes time to come true, such as an age passing a limit.
func waitHolderWithin(t *testing.T, g *Guard, what string, within time.Duration, pred func(*Holder) bool) (*Holder, time.Duration) {
	t.Helper()
	start := time.Now()
	var snap *Snapshot
	var found *Holder
	testkit.WaitFor(t, what, within, func() bool {
		var err error
		if snap, err = g.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range snap.Holders {
			if pred(&snap.Holders[i]) {
				found = &snap.Holders[i]
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("holders: %+v", snap.Holders) })
	d := time.Since(start)
	t.Logf("%s detected in %v: %s, %d xids, %v", what, d.Round(time.Millisecond), found.Describe(), found.AgeXIDs, found.Age.Round(time.Millisecond))
	return found, d
}

func alive(t *testing.T, pool *pgxpool.Pool, pids ...int) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, p := range pids {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", p).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[p] = n > 0
	}
	return out
}

func waitGone(t *testing.T, pool *pgxpool.Pool, p int) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("pid %d to end", p), 5*time.Second, func() bool { return !alive(t, pool, p)[p] })
}

func policy(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := ParsePolicy("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiscoverIdleXid(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	g := New(guardPool(t, url), nil, Options{})
	holder := connect(t, url, "idle-xid")
	exec(t, holder, "BEGIN", "SELECT txid_current()")
	began := time.Now()
	burn(t, url, 20)
	h, _ := waitHolder(t, g, "idle xid", func(h *Holder) bool { return h.Source == SourceSession && h.PID == pid(holder) })
	if h.BackendXID == 0 || h.Xmin != h.BackendXID || h.AgeXIDs < 20 {
		t.Errorf("holder xid %d xmin %d age %d: want backend_xid held, age >= 20", h.BackendXID, h.Xmin, h.AgeXIDs)
	}
	if h.State != "idle in transaction" || h.ApplicationName != "idle-xid" || h.User != "postgres" {
		t.Errorf("holder = %+v", h)
	}
	if h.Age <= 0 || h.Age > time.Since(began)+time.Second {
		t.Errorf("age %v, want about %v", h.Age, time.Since(began))
	}
	// The guard's own connections never show up.
	snap, err := g.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(snap.Sessions, snap.Holders...) {
		if s.ApplicationName == ApplicationName {
			t.Errorf("guard's own session reported: %+v", s)
		}
	}
	if o := snap.Oldest(SourceSession); o == nil || o.PID != pid(holder) {
		t.Errorf("oldest session = %+v", o)
	}
}

func TestDiscoverRepeatableRead(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	g := New(guardPool(t, url), nil, Options{})
	holder := connect(t, url, "rr-report")
	exec(t, holder, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT 1 /*app='reports',action='monthly%20close'*/")
	burn(t, url, 10)
	isHolder := func(h *Holder) bool { return h.Source == SourceSession && h.PID == pid(holder) }
	waitHolder(t, g, "repeatable read snapshot", isHolder)
	// Its age grows with the transaction's: it passes a second.
	h, _ := waitHolderWithin(t, g, "repeatable read snapshot a second old", 10*time.Second, func(h *Holder) bool { return isHolder(h) && h.Age >= time.Second })
	if h.BackendXmin == 0 || h.BackendXID != 0 || h.AgeXIDs < 10 {
		t.Errorf("xmin %d xid %d age %d: want a snapshot xmin only, age >= 10", h.BackendXmin, h.BackendXID, h.AgeXIDs)
	}
	if h.Tags["app"] != "reports" || h.Tags["action"] != "monthly close" {
		t.Errorf("tags = %v", h.Tags)
	}
}

// reader runs a REPEATABLE READ transaction with a long statement in the
// background; the returned channel yields the statement's error.
func reader(t *testing.T, ctx context.Context, url, app string) (*pgx.Conn, <-chan error) {
	t.Helper()
	conn := connect(t, url, app)
	exec(t, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT count(*) FROM pg_class, pg_sleep(30)")
		done <- err
	}()
	return conn, done
}

func isCancel(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// TestStaggeredReadersHorizonWindow: three overlapping readers, each far
// younger than max_transaction_age, never let the horizon go; once the
// class has held it for horizon_window every reader but the oldest is
// cancelled, in one poll.
func TestStaggeredReadersHorizonWindow(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	pool := guardPool(t, url)
	var logs bytes.Buffer
	var logMu sync.Mutex
	g := New(pool, policy(t, `
classes:
  - name: analytics
    match: {application_name: analytics-reader}
    max_transaction_age: 60s
    horizon_window: 2s
    action: cancel
`), Options{Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns []*pgx.Conn
	var dones []<-chan error
	for i := 0; i < 3; i++ {
		c, d := reader(t, ctx, url, "analytics-reader")
		conns, dones = append(conns, c), append(dones, d)
		// The next reader starts once this one is half a second old.
		waitHolderWithin(t, g, fmt.Sprintf("reader %d half a second old", i), 10*time.Second, func(h *Holder) bool {
			return h.PID == pid(c) && h.Age >= 500*time.Millisecond
		})
	}
	youngest := pid(conns[2])
	var acts []Action
	testkit.WaitFor(t, "horizon_window to trigger", 10*time.Second, func() bool {
		var err error
		if acts, err = g.Step(ctx); err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			if a.Rule != "horizon_window" {
				t.Fatalf("unexpected action %+v", a)
			}
		}
		return len(acts) > 0
	})
	if len(acts) != 2 || acts[0].PID != pid(conns[1]) || acts[1].PID != youngest {
		t.Fatalf("actions = %+v, want the two younger readers %d and %d, oldest first", acts, pid(conns[1]), youngest)
	}
	for _, got := range acts {
		if got.Kind != ActionCancel || !got.Done || got.Class != "analytics" {
			t.Fatalf("action = %+v, want a cancel done", got)
		}
	}
	for _, d := range dones[1:] {
		select {
		case err := <-d:
			if !isCancel(err) {
				t.Fatalf("younger reader: err %v, want a cancel (57014)", err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("younger reader still running after cancel")
		}
	}
	select {
	case err := <-dones[0]:
		t.Fatalf("oldest reader ended: %v", err)
	default:
	}
	logMu.Lock()
	line := logs.String()
	logMu.Unlock()
	for _, want := range []string{`"class":"analytics"`, `"action":"cancel"`, `"rule":"horizon_window"`, fmt.Sprintf(`"pid":%d`, youngest), `"dry_run":false`, `"age_s"`, `"xmin_age"`, `"reason"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %s:\n%s", want, line)
		}
	}
	cancel()
	<-dones[0]
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestMaxConcurrentCancelsYoungest(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	pool := guardPool(t, url)
	g := New(pool, policy(t, `
classes:
  - name: reports
    match: {application_name: "conc-*"}
    max_concurrent: 1
    action: cancel
`), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, doneA := reader(t, ctx, url, "conc-a")
	waitHolder(t, g, "reader a", func(h *Holder) bool { return h.PID == pid(a) })
	b, doneB := reader(t, ctx, url, "conc-b")
	waitHolder(t, g, "reader b", func(h *Holder) bool { return h.PID == pid(b) })
	acts, err := g.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].PID != pid(b) || acts[0].Rule != "max_concurrent" || !acts[0].Done {
		t.Fatalf("actions = %+v, want one cancel of the younger reader %d", acts, pid(b))
	}
	if err := <-doneB; !isCancel(err) {
		t.Fatalf("younger reader: %v, want cancelled", err)
	}
	// b's transaction is now aborted (holds nothing): no further action.
	acts, err = g.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 0 {
		t.Fatalf("second step actions = %+v, want none", acts)
	}
	select {
	case err := <-doneA:
		t.Fatalf("older reader ended: %v", err)
	default:
	}
	cancel()
	<-doneA
}

// TestRetryHoldingAnEndedReportsHorizon: a report refused while another
// runs is retried less than one poll before the running one ends. Its new
// snapshot has the running report's xid as xmin (the readers take an xid,
// as a report that writes does), so after that report commits it holds the
// horizon that report pinned, from that report's start, though it is the
// only member open at the next poll and its transaction is young. The
// guard refuses it by the snapshot it holds, under max_concurrent and under
// horizon_window alike; the next retry, whose snapshot is its own, runs.
func TestRetryHoldingAnEndedReportsHorizon(t *testing.T) {
	for _, rule := range []string{"max_concurrent: 1", "horizon_window: 1s"} {
		name, _, _ := strings.Cut(rule, ":")
		t.Run(name, func(t *testing.T) { retryHoldingAnEndedReportsHorizon(t, name, rule) })
	}
}

func retryHoldingAnEndedReportsHorizon(t *testing.T, name, rule string) {
	url := testkit.EmptyDBURL(t)
	pool := guardPool(t, url)
	g := New(pool, policy(t, `
classes:
  - name: analytics
    match: {application_name: analytics-reader}
    `+rule+`
    action: cancel
`), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	step := func() []Action {
		t.Helper()
		acts, err := g.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			t.Logf("%s pid %d: %s", a.Rule, a.PID, a.Reason)
		}
		return acts
	}
	// xmin is a session's snapshot's xmin, its xid and its state.
	xmin := func(c *pgx.Conn) (xmin, xid int64, state string) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT coalesce(backend_xmin::text::bigint, 0), coalesce(backend_xid::text::bigint, 0), state
		  FROM pg_stat_activity WHERE pid = $1`, pid(c)).Scan(&xmin, &xid, &state); err != nil {
			t.Fatal(err)
		}
		return xmin, xid, state
	}

	// Report A runs: a REPEATABLE READ snapshot and an xid of its own.
	a := connect(t, url, "analytics-reader")
	exec(t, a, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT pg_current_xact_id()")
	_, xidA, _ := xmin(a)
	if acts := step(); len(acts) != 0 {
		t.Fatalf("one report: actions %+v, want none", acts)
	}
	// The class has held the horizon past the window (a single member is
	// left alone whatever its age).
	waitHolderWithin(t, g, "report A older than the window", 10*time.Second, func(h *Holder) bool {
		return h.PID == pid(a) && h.Age > 1500*time.Millisecond
	})
	if acts := step(); len(acts) != 0 {
		t.Fatalf("one report past the window: actions %+v, want none", acts)
	}

	// attempt begins a report on b and runs its scan in the background;
	// it returns the snapshot's xmin and the scan's outcome.
	b := connect(t, url, "analytics-reader")
	// A scan still running when the test ends (or fails) is stopped before
	// b is closed.
	var scans sync.WaitGroup
	t.Cleanup(func() { cancel(); scans.Wait() })
	attempt := func() (int64, <-chan error) {
		t.Helper()
		exec(t, b, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT pg_current_xact_id()")
		x, _, _ := xmin(b)
		done := make(chan error, 1)
		scans.Add(1)
		go func() {
			defer scans.Done()
			_, err := b.Exec(ctx, "SELECT count(*) FROM pg_class, pg_sleep(30)")
			done <- err
		}()
		// Act on a running statement, not on a session idle in its
		// transaction (which cancel would escalate to terminate).
		testkit.WaitFor(t, "the report's scan to run", 5*time.Second, func() bool {
			_, _, state := xmin(b)
			return state == "active"
		})
		return x, done
	}
	refused := func(what string, done <-chan error) {
		t.Helper()
		acts := step()
		if len(acts) != 1 || acts[0].PID != pid(b) || acts[0].Rule != name || acts[0].Kind != ActionCancel || !acts[0].Done {
			t.Fatalf("%s: actions %+v, want one %s cancel of pid %d", what, acts, name, pid(b))
		}
		select {
		case err := <-done:
			if !isCancel(err) {
				t.Fatalf("%s: %v, want a cancel (57014)", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still running after the cancel", what)
		}
		exec(t, b, "ROLLBACK")
	}

	// B's first attempt overlaps A: refused.
	_, done := attempt()
	refused("B overlapping the running report A", done)

	// B retries just before A ends: its snapshot's xmin is A's xid. A
	// commits before the guard polls again.
	x, done := attempt()
	if x != xidA {
		t.Fatalf("the retry's snapshot xmin %d, want report A's xid %d (is another transaction open?)", x, xidA)
	}
	exec(t, a, "COMMIT")
	refused("B's retry holding the ended report A's horizon", done)

	// B retries again: A has ended, its snapshot is its own. Let run.
	x, done = attempt()
	if x <= xidA {
		t.Fatalf("the second retry's snapshot xmin %d, want newer than A's xid %d", x, xidA)
	}
	if acts := step(); len(acts) != 0 {
		t.Fatalf("a retry holding its own snapshot: actions %+v, want none", acts)
	}
	select {
	case err := <-done:
		t.Fatalf("the second retry ended: %v", err)
	default:
	}
	cancel()
	<-done
}

// TestMixedSessions: only sessions matching a class are acted on; dry-run
// changes nothing.
func TestMixedSessions(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	pool := guardPool(t, url)
	ctx := context.Background()
	role := fmt.Sprintf("exempt_%d", os.Getpid())
	exec(t, connect(t, url, ""), "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, url)
		if err == nil {
			c.Exec(ctx, "DROP ROLE IF EXISTS "+role)
			c.Close(ctx)
		}
	})
	src := `
exempt_roles: [` + role + `]
classes:
  - name: batch
    match: {application_name: "batch-report"}
    max_idle_in_transaction: 1s
    action: cancel
  - name: tagged
    match: {comment: {app: reports}}
    max_transaction_age: 1s
    action: terminate
`
	m1 := connect(t, url, "batch-report")
	exec(t, m1, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT 1")
	m2 := connect(t, url, "psql")
	exec(t, m2, "BEGIN", "SELECT txid_current() /*app='reports'*/")
	u1 := connect(t, url, "web")
	exec(t, u1, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT 1")
	u2 := connect(t, url, "batch-other")
	exec(t, u2, "BEGIN", "SELECT txid_current() /*app='billing'*/")
	ecfg, _ := pgx.ParseConfig(url)
	ecfg.User = role
	ecfg.RuntimeParams["application_name"] = "batch-report"
	e, err := pgx.ConnectConfig(ctx, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	exec(t, e, "BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT 1")
	all := []int{pid(m1), pid(m2), pid(u1), pid(u2), pid(e)}
	// Both members pass their limits: m1 idle in its transaction, m2 open,
	// for more than a second.
	g := New(pool, nil, Options{})
	waitHolderWithin(t, g, "batch-report idle in transaction over 1s", 10*time.Second, func(h *Holder) bool {
		return h.PID == pid(m1) && h.IdleInTransaction() && h.IdleFor > time.Second
	})
	waitHolderWithin(t, g, "the tagged transaction open over 1s", 10*time.Second, func(h *Holder) bool {
		return h.PID == pid(m2) && h.Age > time.Second
	})

	want := map[int]Action{
		pid(m1): {Class: "batch", Rule: "max_idle_in_transaction", Kind: ActionTerminate, Configured: ActionCancel},
		pid(m2): {Class: "tagged", Rule: "max_transaction_age", Kind: ActionTerminate, Configured: ActionTerminate},
	}
	check := func(acts []Action, dry bool) {
		t.Helper()
		got := map[int]bool{}
		for _, a := range acts {
			w, ok := want[a.PID]
			if !ok {
				t.Errorf("acted on a session outside the policy or exempt: %+v", a)
				continue
			}
			got[a.PID] = true
			if a.Class != w.Class || a.Rule != w.Rule || a.Kind != w.Kind || a.Configured != w.Configured || a.DryRun != dry || a.Done == dry {
				t.Errorf("action %+v, want %+v dry_run=%v", a, w, dry)
			}
		}
		if len(got) != len(want) {
			t.Errorf("acted on %v, want %d sessions", got, len(want))
		}
	}
	reg := prometheus.NewRegistry()
	dry := New(pool, policy(t, src), Options{DryRun: true, Registerer: reg})
	acts, err := dry.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(acts, true)
	// A dry run ends nothing: every session but m1 still answers its last
	// statement again (a terminated backend would fail it; m1 must stay
	// idle for the live run, which acts on it only if it is still there).
	for p, ok := range alive(t, pool, all...) {
		if !ok {
			t.Errorf("dry run: pid %d was ended", p)
		}
	}
	for c, last := range map[*pgx.Conn]string{m2: "SELECT txid_current() /*app='reports'*/", u1: "SELECT 1",
		u2: "SELECT txid_current() /*app='billing'*/", e: "SELECT 1"} {
		if _, err := c.Exec(ctx, last); err != nil {
			t.Errorf("dry run: session %d no longer answers: %v", pid(c), err)
		}
	}
	if v := counterValue(t, reg, "millrace_guard_actions_total", map[string]string{"class": "batch", "action": "would_terminate"}); v != 1 {
		t.Errorf("actions_total{batch,would_terminate} = %v, want 1", v)
	}
	if v := counterValue(t, reg, "millrace_guard_oldest_xmin_age_seconds", map[string]string{"source": "session"}); v < 1 {
		t.Errorf("oldest_xmin_age_seconds{session} = %v, want >= 1", v)
	}

	live := New(pool, policy(t, src), Options{})
	acts, err = live.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(acts, false)
	waitGone(t, pool, pid(m1))
	waitGone(t, pool, pid(m2))
	for _, p := range []int{pid(u1), pid(u2), pid(e)} {
		if !alive(t, pool, p)[p] {
			t.Errorf("session %d outside the policy was ended", p)
		}
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metrics
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}

func TestPreparedTransaction(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: prepared transaction tests need a throwaway cluster of their own")
	}
	ctx := context.Background()
	cl, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	appURL, err := cl.CreateDatabase(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	pool := guardPool(t, cl.URL("postgres"))
	c := connect(t, appURL, "twophase")
	exec(t, c, "CREATE TABLE t(x int)", "BEGIN", "SELECT txid_current()", "INSERT INTO t VALUES (1)", "PREPARE TRANSACTION 'pay''42'")
	burn(t, cl.URL("postgres"), 10)
	src := "prepared_max_age: 1s\n"
	g := New(pool, policy(t, src), Options{})
	h, _ := waitHolder(t, g, "prepared transaction", func(h *Holder) bool { return h.Source == SourcePrepared })
	if h.GID != "pay'42" || h.Database != "app" || h.User != "postgres" || h.AgeXIDs < 10 || h.Xmin == 0 {
		t.Errorf("prepared holder = %+v", h)
	}
	waitHolderWithin(t, g, "prepared transaction over prepared_max_age", 10*time.Second, func(h *Holder) bool {
		return h.Source == SourcePrepared && h.Age > time.Second
	})
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Not opted in: warn only.
	acts, err := g.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Kind != ActionWarn || acts[0].Rule != "prepared_max_age" || acts[0].Age < time.Second {
		t.Fatalf("actions = %+v, want one warning", acts)
	}
	// Opted in, dry run: still there.
	acts, err = New(pool, policy(t, src+"rollback_prepared: true\n"), Options{DryRun: true}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Kind != ActionRollbackPrepared || !acts[0].DryRun || count() != 1 {
		t.Fatalf("dry run: actions = %+v, %d prepared", acts, count())
	}
	// Opted in: rolled back, connecting to its database.
	acts, err = New(pool, policy(t, src+"rollback_prepared: true\n"), Options{}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || !acts[0].Done || acts[0].Err != nil || count() != 0 {
		t.Fatalf("actions = %+v, %d prepared left", acts, count())
	}
}

// TestStandbyAndSlot: a standby with hot_standby_feedback and a REPEATABLE
// READ reader on it is found through pg_stat_replication and, through a
// direct connection, the reader itself, which the guard cancels there. Then
// a physical slot given an xmin by a standby's feedback stays behind,
// inactive, when that standby goes away.
func TestStandbyAndSlot(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: standby and slot tests need a throwaway cluster of their own")
	}
	ctx := context.Background()
	cl, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	sb := testkit.AddStandby(t, cl, testkit.Options{})
	defer sb.Stop()
	pool := guardPool(t, cl.URL("postgres"))
	g := New(pool, policy(t, `
classes:
  - name: replica-reports
    match: {application_name: standby-reader}
    max_transaction_age: 2s
    action: cancel
`), Options{StandbyURLs: []string{sb.URL("postgres")}})
	defer g.Close()
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	r, done := reader(t, rctx, sb.URL("postgres"), "standby-reader")
	burn(t, cl.URL("postgres"), 20)
	h, _ := waitHolder(t, g, "standby feedback", func(h *Holder) bool {
		return h.Source == SourceStandby && h.StandbySession != nil && h.StandbySession.PID == pid(r) && h.AgeXIDs >= 10
	})
	if h.Node != "" || h.StandbySession.Node == "" || h.StandbySession.ApplicationName != "standby-reader" || h.StandbySession.BackendXmin == 0 {
		t.Errorf("standby holder = %+v, session %+v", h, h.StandbySession)
	}
	if h.Age <= 0 || h.Age != h.StandbySession.Age {
		t.Errorf("standby age %v, want the reader's transaction age %v", h.Age, h.StandbySession.Age)
	}
	// Enforcement on the standby through the direct connection.
	var act *Action
	testkit.WaitFor(t, "an action on the standby reader", 10*time.Second, func() bool {
		acts, err := g.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range acts {
			act = &acts[i]
		}
		return act != nil
	})
	if act.PID != pid(r) || act.Node == "" || act.Kind != ActionCancel || !act.Done || act.Source != SourceStandby {
		t.Fatalf("standby action = %+v", act)
	}
	if err := <-done; !isCancel(err) {
		t.Fatalf("standby reader: %v, want cancelled", err)
	}
	r.Close(ctx)
	sb.Stop()

	// An inactive physical slot holding xmin.
	c := connect(t, cl.URL("postgres"), "")
	exec(t, c, "SELECT pg_create_physical_replication_slot('guard_slot', true)")
	sb2 := testkit.AddStandby(t, cl, testkit.Options{Settings: map[string]string{"primary_slot_name": "'guard_slot'"}})
	testkit.WaitFor(t, "the slot to get an xmin from the standby's feedback", 10*time.Second, func() bool {
		var has bool
		if err := c.QueryRow(ctx, "SELECT xmin IS NOT NULL FROM pg_replication_slots WHERE slot_name = 'guard_slot'").Scan(&has); err != nil {
			t.Fatal(err)
		}
		return has
	})
	sb2.Stop()
	burn(t, cl.URL("postgres"), 10)
	sg := New(pool, policy(t, "slot_max_age: 1s\n"), Options{})
	h, _ = waitHolder(t, sg, "inactive slot", func(h *Holder) bool {
		return h.Source == SourceSlot && h.Slot == "guard_slot" && !h.Active && h.AgeXIDs >= 10
	})
	if h.SlotType != "physical" || h.Xmin == 0 {
		t.Errorf("slot holder = %+v", h)
	}
	isOldSlot := func(h *Holder) bool { return h.Source == SourceSlot && h.Age > time.Second }
	waitHolderWithin(t, sg, "inactive slot over slot_max_age", 10*time.Second, isOldSlot)
	slotExists := func() bool {
		var n int
		c.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'guard_slot'").Scan(&n)
		return n == 1
	}
	acts, err := sg.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Kind != ActionWarn || acts[0].Slot != "guard_slot" || acts[0].Age < time.Second || !slotExists() {
		t.Fatalf("not opted in: actions = %+v, want one warning and the slot kept", acts)
	}
	dg := New(pool, policy(t, "slot_max_age: 1s\ndrop_inactive_slots: true\n"), Options{})
	waitHolder(t, dg, "inactive slot (new tracker)", func(h *Holder) bool { return h.Source == SourceSlot })
	waitHolderWithin(t, dg, "inactive slot over slot_max_age (new tracker)", 10*time.Second, isOldSlot)
	acts, err = dg.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Kind != ActionDropSlot || !acts[0].Done || slotExists() {
		t.Fatalf("opted in: actions = %+v, slot exists %v", acts, slotExists())
	}
}

func TestCheck(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	pool := guardPool(t, url)
	testkit.RequireServerVersion(t, pool, 150000) // pg_stat_force_next_flush
	ctx := context.Background()
	th := Thresholds{WarnAge: 500 * time.Millisecond, CritAge: time.Second}
	g := New(pool, nil, Options{Thresholds: th})
	c := connect(t, url, "worker")
	exec(t, c, "CREATE TABLE jobs(id int)", "INSERT INTO jobs SELECT generate_series(1, 1000)")
	st, line, err := g.Check(ctx)
	if err != nil || st != OK || !strings.HasPrefix(line, "OK: ") {
		t.Fatalf("healthy: %v %q %v", st, line, err)
	}
	t.Log(line)
	pinner := connect(t, url, "psql")
	exec(t, pinner, "BEGIN", "SELECT txid_current()")
	exec(t, c, "DELETE FROM jobs", "SELECT pg_stat_force_next_flush()")
	// As the pin ages, Check goes from OK to WARNING (past 0.5s), and only
	// then to CRITICAL (past 1s).
	var seen []Status
	testkit.WaitFor(t, "CRITICAL", 10*time.Second, func() bool {
		st, line, _ = g.Check(ctx)
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
			t.Log(line)
		}
		if st == Warning && !strings.HasPrefix(line, "WARNING: ") {
			t.Errorf("pinned past WarnAge: %v %q, want WARNING", st, line)
		}
		return st == Critical
	}, func() string { return fmt.Sprintf("statuses %v", seen) })
	if !slices.Equal(seen, []Status{OK, Warning, Critical}) && !slices.Equal(seen, []Status{Warning, Critical}) {
		t.Errorf("statuses as the pin aged: %v, want OK, WARNING, CRITICAL", seen)
	}
	want := fmt.Sprintf("(session pid %d idle in transaction, app=psql user=postgres", pid(pinner))
	if st != Critical || !regexp.MustCompile(`^CRITICAL: oldest xmin [1-9][0-9]* s, [0-9]+ xids \(`).MatchString(line) || !strings.Contains(line, want) || !strings.HasSuffix(line, "holding 1000 dead tuples") {
		t.Errorf("pinned: %v %q, want CRITICAL naming %q holding 1000 dead tuples", st, line, want)
	}
	exec(t, pinner, "ROLLBACK")
	if st, line, _ = g.Check(ctx); st != OK {
		t.Errorf("released: %v %q", st, line)
	}
	// An unreachable primary is UNKNOWN.
	bad := guardPool(t, "postgres://postgres@127.0.0.1:1/x?connect_timeout=1")
	if st, line, err = New(bad, nil, Options{}).Check(ctx); st != Unknown || err == nil || !strings.HasPrefix(line, "UNKNOWN: ") {
		t.Errorf("unreachable: %v %q %v", st, line, err)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	p := policy(t, "interval: 100ms\n")
	reg := prometheus.NewRegistry()
	g := New(guardPool(t, url), p, Options{Registerer: reg})
	g.pollDone.Arm()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	// Two polls: the first at once, the next an interval later.
	for i := 0; i < 2; i++ {
		if err := g.pollDone.Wait(t, 10*time.Second); err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
	}
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Run took %v to stop", d)
	}
	if v := counterValue(t, reg, "millrace_guard_oldest_xmin_age_xids", map[string]string{"source": "slot"}); v != 0 {
		t.Fatalf("oldest_xmin_age_xids{slot} = %v, want 0", v)
	}
}
