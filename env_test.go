package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
)

// The tests in this file run the queue under the settings real databases
// have (DESIGN.md P14): a default isolation above READ COMMITTED, server
// timeouts on the role, a connection pooler. Each sets what it tests with
// ALTER DATABASE or ALTER ROLE, so that every connection the client opens
// afterwards gets it, as it would in a deployment.

// alterDatabase runs ALTER DATABASE <pool's database> SET name = value.
// Connections opened afterwards get the setting.
func alterDatabase(t *testing.T, pool *pgxpool.Pool, name, value string) {
	t.Helper()
	db := pool.Config().ConnConfig.Database
	if _, err := pool.Exec(context.Background(), fmt.Sprintf("ALTER DATABASE %s SET %s = %s",
		pgx.Identifier{db}.Sanitize(), name, quoteLiteral(value))); err != nil {
		t.Fatal(err)
	}
}

func quoteLiteral(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += "''"
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

// poolOn opens a pool on url, closed at the end of the test.
func poolOn(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := newPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// workOnce inserts n jobs (singly and in bulk) through the last of clients
// and works them with all of them, then checks that every job ran exactly
// once and finished completed, with no error text stored. It stops the
// clients: the runs are counted once no more can come.
func workOnce(t *testing.T, owner *pgxpool.Pool, clients []*millrace.Client, n int, s *seen) {
	t.Helper()
	ctx := context.Background()
	producer := clients[len(clients)-1]
	single := n / 5
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := p; i < single; i += 2 {
				if _, err := producer.Insert(ctx, countArgs{N: i}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	for start := single; start < n; start += 400 {
		var params []millrace.InsertManyParams
		for i := start; i < min(start+400, n); i++ {
			params = append(params, millrace.InsertManyParams{Args: countArgs{N: i}})
		}
		if _, err := producer.InsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	waitFor(t, "every job to run", 90*time.Second, func() bool { return s.n.Load() >= int64(n) },
		func() string { return fmt.Sprintf("%d runs of %d jobs", s.n.Load(), n) })
	// Every job's outcome is written: history holds one completed attempt
	// per job and nothing else.
	var done, bad int
	waitFor(t, "every outcome to be written", 30*time.Second, func() bool {
		owner.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state = 'completed' AND error IS NULL), count(*) FILTER (WHERE state <> 'completed' OR error IS NOT NULL) FROM millrace.history").Scan(&done, &bad)
		return done+bad >= n
	}, func() string { return fmt.Sprintf("%d completed, %d other outcomes", done, bad) })
	// A duplicate run comes from a job still in the queue (available,
	// running or scheduled) or from a batch claimed before its acks: once
	// every job has its outcome, the ring has turned once more and a
	// sentinel inserted after that has run (settle), the clients are
	// stopped (Stop waits for the jobs they run) and none can come.
	settle(t, owner, producer, n, s.ran, true)
	for _, c := range clients {
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	owner.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state <> 'completed' OR error IS NOT NULL) FROM millrace.history").Scan(&bad)
	s.mu.Lock()
	defer s.mu.Unlock()
	dups, lost := 0, 0
	for i := 0; i < n; i++ {
		switch r := s.runs[i]; {
		case r == 0:
			lost++
		case r > 1:
			dups++
		}
	}
	if dups > 0 || lost > 0 || bad > 0 {
		rows, _ := owner.Query(ctx, "SELECT state, error, count(*) FROM millrace.history WHERE state <> 'completed' OR error IS NOT NULL GROUP BY 1, 2")
		for rows.Next() {
			v, _ := rows.Values()
			t.Log("history:", v)
		}
		rows.Close()
		t.Fatalf("%d of %d jobs ran more than once, %d never ran, %d outcomes other than completed", dups, n, lost, bad)
	}
}

// TestDefaultIsolation: the database's default isolation is REPEATABLE
// READ or SERIALIZABLE. Every protocol transaction runs at READ COMMITTED
// whatever the default (a claim under REPEATABLE READ took its snapshot
// before its lock and handed a second claimer the first one's jobs), and a
// serialization failure is retried, never stored as the job's outcome.
func TestDefaultIsolation(t *testing.T) {
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			ctx := context.Background()
			owner := newDB(t)
			alterDatabase(t, owner, "default_transaction_isolation", iso)
			url := owner.Config().ConnString()
			s := &seen{runs: map[int]int{}}
			var clients []*millrace.Client
			for i := 0; i < 2; i++ {
				pool := poolOn(t, url)
				var got string
				if err := pool.QueryRow(ctx, "SHOW default_transaction_isolation").Scan(&got); err != nil || got != iso {
					t.Fatalf("default_transaction_isolation = %q, %v; want %q", got, err, iso)
				}
				c := startClient(t, pool, countingWorkers(s, 0), millrace.Config{
					Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
					RotateAfter: 300 * time.Millisecond, MaintenanceEvery: 100 * time.Millisecond})
				clients = append(clients, c)
			}
			producer := clients[1]
			// A unique insert needs READ COMMITTED: the client's own
			// transaction has it whatever the default.
			// (Completed jobs keep blocking: the first may be worked
			// before the second insert.)
			u := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true, ByState: []millrace.JobState{millrace.JobCompleted}}}
			if r := mustInsert(t, producer, countArgs{N: -1}, u); r.Duplicate {
				t.Fatal("the first unique insert was a duplicate")
			}
			if r := mustInsert(t, producer, countArgs{N: -1}, u); !r.Duplicate {
				t.Fatal("the second unique insert was not a duplicate")
			}
			workOnce(t, owner, clients, 2000, s)
		})
	}
}

// TestFlushCancelledIsRetried: an ack flush the server cancels (here a
// cancel request while it waits for its lock; a serialization failure, a
// deadlock or a timeout are the same: the server rolled it back for a
// reason of its own) is sent again, not taken for an ack the server
// rejected: the job's outcome is stored as it was, not with a placeholder
// error text.
func TestFlushCancelledIsRetried(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	release := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		<-release
		return nil
	}))
	c := startClient(t, pool, workers, millrace.Config{})
	r := mustInsert(t, c, countArgs{N: 1}, nil)
	var owner int32
	waitFor(t, "the job to be claimed", 10*time.Second, func() bool {
		return pool.QueryRow(ctx, "SELECT owner FROM millrace.jobs WHERE id = $1 AND state = 'running'", r.ID).Scan(&owner) == nil
	})
	// Hold the owner's flush lock: its flush waits for it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(1836412277, $1)", owner); err != nil {
		t.Fatal(err)
	}
	close(release)
	// waiter is the backend waiting for the lock, and when its statement began.
	waiter := func() (pid int, since time.Time) {
		pool.QueryRow(ctx, `SELECT l.pid, a.query_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.classid = 1836412277 AND l.objid = $1 AND NOT l.granted`, owner).Scan(&pid, &since)
		return pid, since
	}
	var first int
	var firstAt time.Time
	waitFor(t, "the flush to wait for its lock", 10*time.Second, func() bool { first, firstAt = waiter(); return first != 0 })
	if _, err := pool.Exec(ctx, "SELECT pg_cancel_backend($1)", first); err != nil {
		t.Fatal(err)
	}
	// The flush comes back and waits again (the same lock).
	waitFor(t, "the flush to be sent again", 10*time.Second, func() bool {
		pid, at := waiter()
		return pid != 0 && at.After(firstAt)
	})
	tx.Rollback(ctx)
	var state string
	var errText *string
	waitFor(t, "the job's outcome", 10*time.Second, func() bool {
		return pool.QueryRow(ctx, "SELECT state, error FROM millrace.history WHERE id = $1", r.ID).Scan(&state, &errText) == nil
	})
	if state != "completed" || errText != nil {
		t.Fatalf("job stored as %s with error %q; want completed, no error", state, deref(errText))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// logCounter is a slog handler that counts the records whose message
// contains any of its substrings, and passes every record to next.
type logCounter struct {
	next  slog.Handler
	match []string
	n     *atomic.Int64
}

func countLogs(match ...string) (*slog.Logger, *atomic.Int64) {
	n := &atomic.Int64{}
	return slog.New(&logCounter{next: quietLogger().Handler(), match: match, n: n}), n
}

func (h *logCounter) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (h *logCounter) Handle(ctx context.Context, r slog.Record) error {
	for _, m := range h.match {
		if strings.Contains(r.Message, m) {
			h.n.Add(1)
		}
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}
func (h *logCounter) WithAttrs(a []slog.Attr) slog.Handler {
	return &logCounter{next: h.next.WithAttrs(a), match: h.match, n: h.n}
}
func (h *logCounter) WithGroup(g string) slog.Handler {
	return &logCounter{next: h.next.WithGroup(g), match: h.match, n: h.n}
}

// alterRole runs ALTER ROLE <the user of url> SET name = value.
func alterRole(t *testing.T, owner *pgxpool.Pool, url, name, value string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(context.Background(), fmt.Sprintf("ALTER ROLE %s SET %s = %s",
		pgx.Identifier{cfg.User}.Sanitize(), name, quoteLiteral(value))); err != nil {
		t.Fatal(err)
	}
}

// startCounting is countingWorkers that records each run when it starts,
// then works for work.
func startCounting(s *seen, work time.Duration) *millrace.Workers {
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		s.add(j.Args.N)
		time.Sleep(work)
		return nil
	}))
	return workers
}

// finished is the number of completed attempts in history.
func finished(pool *pgxpool.Pool) int {
	var n int
	pool.QueryRow(context.Background(), "SELECT count(*) FROM millrace.history WHERE state = 'completed'").Scan(&n)
	return n
}

// checkOnce fails the test unless jobs 0..n-1 each ran exactly once.
func checkOnce(t *testing.T, s *seen, n int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		if s.runs[i] != 1 {
			t.Errorf("job %d ran %d times, want 1 (runs: %v)", i, s.runs[i], s.runs)
		}
	}
}

// TestIdleSessionTimeout: the worker role has idle_session_timeout = 1s,
// and jobs run for 3 s. The session connection of a process sits idle by
// design (it listens): the server must not close it (notifications would
// be missed while it reconnects), and a live process keeps its batches
// (its lease is renewed through the pool, whose idle connections the
// server closes). Each job runs exactly once, and no process loses its
// session connection.
func TestIdleSessionTimeout(t *testing.T) {
	owner := newDB(t)
	url := testkit.LoginAs(t, owner, "millrace_worker")
	alterRole(t, owner, url, "idle_session_timeout", "1s")
	logger, lost := countLogs("lost the session connection")
	s := &seen{runs: map[int]int{}}
	var clients []*millrace.Client
	for i := 0; i < 2; i++ {
		clients = append(clients, startClient(t, poolOn(t, url), startCounting(s, 3*time.Second), millrace.Config{Logger: logger,
			Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}}}))
	}
	c := clients[1]
	const n = 8
	for i := 0; i < n; i++ {
		mustInsert(t, c, countArgs{N: i}, nil)
	}
	waitFor(t, "every job to finish", 60*time.Second, func() bool { return finished(owner) >= n })
	// A duplicate (a batch taken from a process that lost its lease) is a
	// job still in the queue, or a run started before its outcome: once
	// every job has its outcome and a sentinel inserted after that has run
	// (settle), and both processes have stopped, every run has been seen.
	settle(t, owner, c, n, s.ran, false)
	for _, cl := range clients {
		if err := cl.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	checkOnce(t, s, n)
	if k := lost.Load(); k > 0 {
		t.Errorf("a process lost its session connection %d times", k)
	}
}

// TestSessionReconnectKeepsIdentity: the backend of a process's session
// connection is ended while the process runs its jobs. The process is
// alive (its liveness is its lease, renewed through the pool): it connects
// again, keeps its identity and its batches, and renews its lease under
// the same identity; each job runs exactly once.
func TestSessionReconnectKeepsIdentity(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	logger, kept := countLogs("the process keeps its identity")
	s := &seen{runs: map[int]int{}}
	c := startClient(t, pool, startCounting(s, 3*time.Second), millrace.Config{Logger: logger,
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}}})
	const n = 4
	for i := 0; i < n; i++ {
		mustInsert(t, c, countArgs{N: i}, nil)
	}
	var running int
	waitFor(t, "the jobs to be claimed", 10*time.Second, func() bool {
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.jobs WHERE state = 'running'").Scan(&running)
		return running == n
	})
	// The session's backend: the one named as the session of a millrace
	// process, and the process it names.
	session := func() (pid, id int) {
		pool.QueryRow(ctx, `SELECT pid, substr(application_name, length($1) + 1)::int FROM pg_stat_activity
			WHERE datname = current_database() AND starts_with(application_name, $1)`, "millrace process ").Scan(&pid, &id)
		return pid, id
	}
	var pid, id int
	waitFor(t, "the session connection to name itself", 10*time.Second, func() bool { pid, id = session(); return pid != 0 })
	var registered int
	if err := pool.QueryRow(ctx, "SELECT id FROM millrace.process").Scan(&registered); err != nil || registered != id {
		t.Fatalf("the registered process is %d (%v); the session names %d", registered, err, id)
	}
	var beats int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.heartbeat WHERE process = $1", id).Scan(&beats)
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session to be restored", 10*time.Second, func() bool {
		p, _ := session()
		return p != 0 && p != pid
	})
	_, id2 := session()
	t.Logf("identity %d, then %d", id, id2)
	if id2 != id {
		t.Errorf("the process's identity changed from %d to %d", id, id2)
	}
	waitFor(t, "the lease to be renewed under the same identity", 10*time.Second, func() bool {
		var now int
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.heartbeat WHERE process = $1", id).Scan(&now)
		return now > beats
	})
	waitFor(t, "every job to finish", 30*time.Second, func() bool { return finished(pool) >= n })
	var processes int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.process").Scan(&processes)
	if processes != 1 {
		t.Errorf("%d processes registered, want 1", processes)
	}
	checkOnce(t, s, n)
	if kept.Load() != 1 {
		t.Errorf("%d restorations logged, want 1", kept.Load())
	}
}

// TestRoleTimeouts: the worker role has statement_timeout = 1s,
// idle_in_transaction_session_timeout = 1s and lock_timeout = 100ms, and
// each reclaim of a slot takes longer than the statement timeout (a
// trigger sleeps 1.2 s in it here; a large backlog carried forward does
// the same). Maintenance sets the timeouts it needs in its own
// transactions: the ring keeps turning, and every job runs exactly once
// with no bogus outcome.
func TestRoleTimeouts(t *testing.T) {
	owner := newDB(t)
	url := testkit.LoginAs(t, owner, "millrace_worker")
	alterRole(t, owner, url, "statement_timeout", "1s")
	alterRole(t, owner, url, "idle_in_transaction_session_timeout", "1s")
	alterRole(t, owner, url, "lock_timeout", "100ms")
	ringTurnsUnderSlowReclaims(t, owner, url)
}

// TestTextStyles: a database whose DateStyle is 'SQL, DMY' and whose
// IntervalStyle is iso_8601. A pool that reads results in binary (pgx's
// default exec modes) works the queue and reads it back; one that reads
// them as text (exec, simple_protocol: a transaction pooler's modes) is
// refused by Start with ErrTextStyle, on one line, before anything is
// written (it failed to scan the schema's migration times instead), and
// works once its connection string sets DateStyle and IntervalStyle.
func TestTextStyles(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	alterDatabase(t, owner, "DateStyle", "SQL, DMY")
	alterDatabase(t, owner, "IntervalStyle", "iso_8601")
	base := owner.Config().ConnString()
	for _, c := range []struct {
		mode, params string
		refused      bool
	}{
		{"cache_describe", "", false},
		{"exec", "", true},
		{"simple_protocol", "", true},
		{"exec", "&DateStyle=ISO&IntervalStyle=postgres", false},
		{"simple_protocol", "&DateStyle=ISO&IntervalStyle=postgres", false},
	} {
		t.Run(c.mode+c.params, func(t *testing.T) {
			pool := poolOn(t, withParam(base, "default_query_exec_mode", c.mode)+c.params)
			if c.refused {
				client, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger(), Workers: millrace.NewWorkers(),
					Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 1}}})
				if err != nil {
					t.Fatal(err)
				}
				err = client.Start(ctx)
				if !errors.Is(err, millrace.ErrTextStyle) || strings.Contains(err.Error(), "\n") ||
					!strings.Contains(err.Error(), "DateStyle=ISO") || !strings.Contains(err.Error(), "IntervalStyle = 'postgres'") {
					t.Fatalf("Start: %v; want ErrTextStyle on one line, saying what to set", err)
				}
				return
			}
			s := &seen{runs: map[int]int{}}
			clients := []*millrace.Client{startClient(t, pool, countingWorkers(s, 0), millrace.Config{
				Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 4}},
				RotateAfter: 300 * time.Millisecond, MaintenanceEvery: 100 * time.Millisecond})}
			if err := millrace.SetLimit(ctx, pool, "default", millrace.Limit{Rate: 1000, Per: time.Second}); err != nil {
				t.Fatal(err)
			}
			workOnce(t, owner, clients, 50, s)
			if _, err := millrace.QueueCounts(ctx, pool); err != nil {
				t.Error("QueueCounts:", err)
			}
			if _, err := millrace.ReadStats(ctx, pool); err != nil {
				t.Error("ReadStats:", err)
			}
			if _, err := millrace.Limits(ctx, pool); err != nil {
				t.Error("Limits:", err)
			}
			if _, err := ops.Queues(ctx, pool); err != nil {
				t.Error("ops.Queues:", err)
			}
		})
	}
}

// TestTransactionTimeout (PostgreSQL 17 and later): the worker role has
// transaction_timeout = 1s, which ends the whole session of a transaction
// that runs longer, and each reclaim of a slot takes 1.2 s (a trigger
// sleeps in it, as a large backlog carried forward would). Protocol
// transactions turn it off for themselves, as they do statement_timeout:
// the ring keeps turning and every job runs exactly once.
func TestTransactionTimeout(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	var version int
	if err := owner.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 170000 {
		t.Skipf("transaction_timeout is new in PostgreSQL 17 (this server: %d)", version)
	}
	url := testkit.LoginAs(t, owner, "millrace_worker")
	alterRole(t, owner, url, "transaction_timeout", "1s")
	ringTurnsUnderSlowReclaims(t, owner, url)
}

// ringTurnsUnderSlowReclaims makes every reclaim of a slot take 1.2 s (a
// trigger sleeps in it, as a large backlog carried forward does), starts
// two clients on url, and checks that the ring turns (three reclaims) and
// that 1,000 jobs run exactly once (workOnce).
func ringTurnsUnderSlowReclaims(t *testing.T, owner *pgxpool.Pool, url string) {
	t.Helper()
	ctx := context.Background()
	if _, err := owner.Exec(ctx, `CREATE FUNCTION public.slow_reclaim() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(1.2); RETURN NEW; END $$;
		CREATE TRIGGER slow_reclaim BEFORE INSERT ON millrace.reclaim FOR EACH ROW EXECUTE FUNCTION public.slow_reclaim()`); err != nil {
		t.Fatal(err)
	}
	st0, err := millrace.ReadStats(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{runs: map[int]int{}}
	var clients []*millrace.Client
	for i := 0; i < 2; i++ {
		clients = append(clients, startClient(t, poolOn(t, url), countingWorkers(s, 0), millrace.Config{
			Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
			RotateAfter: 300 * time.Millisecond, MaintenanceEvery: 100 * time.Millisecond}))
	}
	waitFor(t, "the ring to turn", 60*time.Second, func() bool {
		st, err := millrace.ReadStats(ctx, owner)
		return err == nil && st.Reclaims-st0.Reclaims >= 3
	})
	workOnce(t, owner, clients, 1000, s)
}

func init() {
	// A worker process of TestPgBouncerKilledWorker (init runs before
	// TestMain, so client_test.go need not know of it).
	if u := os.Getenv("MILLRACE_POOLED_WORKER"); u != "" {
		pooledWorker(u, os.Getenv("MILLRACE_SESSION_URL"), os.Getenv("MILLRACE_TEST_QUEUE"))
	}
}

// pooledWorker is testWorker through a connection pooler: its pool on url,
// its session on sessionURL. It never returns.
func pooledWorker(url, sessionURL, queue string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		os.Exit(3)
	}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		pool.Exec(ctx, "INSERT INTO started_job (n, pid) VALUES ($1, $2)", j.Args.N, os.Getpid())
		select {}
	}))
	lease, _ := time.ParseDuration(os.Getenv("MILLRACE_TEST_LEASE")) // as testWorker
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(), SessionURL: sessionURL,
		Queues: map[string]millrace.QueueConfig{queue: {MaxWorkers: 10}}, ProcessLease: lease, LeaderLease: lease})
	if err != nil {
		os.Exit(4)
	}
	if err := c.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(5)
	}
	select {}
}

// withParam adds a query parameter to a postgres:// URL.
func withParam(u, name, value string) string {
	if strings.Contains(u, "?") {
		return u + "&" + name + "=" + value
	}
	return u + "?" + name + "=" + value
}

// TestPgBouncerTransactionMode: the pool goes through PgBouncer in
// transaction mode (each transaction may get another server connection;
// PgBouncer 1.18 keeps no prepared statement across them), in each query
// exec mode of pgx that sends no named prepared statement. The session
// connection goes to PostgreSQL directly (Config.SessionURL); without it
// Start says so. Jobs run exactly once and the ring turns.
func TestPgBouncerTransactionMode(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	direct := testkit.LoginAs(t, owner, "millrace_worker")
	role, _ := pgx.ParseConfig(direct)
	bouncer := testkit.NewPgBouncer(t, direct, testkit.PgBouncerOptions{Users: []string{role.User}})
	for _, mode := range []string{"cache_describe", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			pooled := withParam(bouncer.URL(direct), "default_query_exec_mode", mode)
			// Without a direct session connection, Start refuses.
			c, err := millrace.NewClient(poolOn(t, pooled), millrace.Config{Logger: quietLogger(), Workers: millrace.NewWorkers(),
				Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(ctx); !errors.Is(err, millrace.ErrThroughPooler) {
				c.Stop(ctx)
				t.Fatalf("Start with the session through the pooler: %v, want ErrThroughPooler", err)
			}
			st0, err := millrace.ReadStats(ctx, owner)
			if err != nil {
				t.Fatal(err)
			}
			s := &seen{runs: map[int]int{}}
			var clients []*millrace.Client
			for i := 0; i < 2; i++ {
				clients = append(clients, startClient(t, poolOn(t, pooled), countingWorkers(s, 0), millrace.Config{SessionURL: direct,
					Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
					RotateAfter: 300 * time.Millisecond, MaintenanceEvery: 100 * time.Millisecond}))
			}
			// The ring turns through the pooler (before the jobs: workOnce
			// stops the clients).
			waitFor(t, "the ring to turn", 30*time.Second, func() bool {
				st, err := millrace.ReadStats(ctx, owner)
				return err == nil && st.Reclaims-st0.Reclaims >= 2
			})
			workOnce(t, owner, clients, 1000, s)
			owner.Exec(ctx, "TRUNCATE millrace.finished, millrace.completed") // the next mode counts its own history
		})
	}
}

// TestPgBouncerKilledWorker: a worker process whose pool goes through
// PgBouncer in transaction mode is killed (SIGKILL) while it runs jobs.
// Its lease, renewed through the pooler, runs out (15 s): its jobs run
// again in another process within 30 s, not after StuckAfter (1 h).
func TestPgBouncerKilledWorker(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	direct := owner.Config().ConnString()
	bouncer := testkit.NewPgBouncer(t, direct, testkit.PgBouncerOptions{})
	pooled := withParam(bouncer.URL(direct), "default_query_exec_mode", "cache_describe")
	// The leader works another queue only.
	leader := startClient(t, poolOn(t, pooled), countingWorkers(&seen{runs: map[int]int{}}, 0), millrace.Config{SessionURL: direct,
		Queues: map[string]millrace.QueueConfig{"a": {MaxWorkers: 1}}})
	for i := 0; i < 5; i++ {
		if _, err := leader.Insert(ctx, countArgs{N: i}, &millrace.InsertOpts{Queue: "b"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := owner.Exec(ctx, "CREATE TABLE started_job (n int, pid int)"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MILLRACE_POOLED_WORKER="+pooled, "MILLRACE_SESSION_URL="+direct, "MILLRACE_TEST_QUEUE=b",
		"MILLRACE_TEST_LEASE=2s")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "the worker process to start its jobs", 30*time.Second, func() bool {
		var n int
		owner.QueryRow(ctx, "SELECT count(*) FROM started_job WHERE pid = $1", cmd.Process.Pid).Scan(&n)
		return n == 5
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	s := &seen{runs: map[int]int{}}
	startClient(t, poolOn(t, pooled), countingWorkers(s, 0), millrace.Config{SessionURL: direct,
		Queues: map[string]millrace.QueueConfig{"b": {MaxWorkers: 5}}})
	waitFor(t, "the killed process's jobs to run again", 30*time.Second, func() bool { return s.n.Load() == 5 })
}

// TestReadsTakeNoPredicateLocks: at a database default of SERIALIZABLE
// the library's reads (QueueCounts, JobByID, ReadStats, the operators'
// Queues) run at READ COMMITTED and leave no predicate lock behind, where
// the same reads as SERIALIZABLE statements take one per partition read
// (the figures of docs/deploy.md, on an empty queue) and keep them while
// a SERIALIZABLE writer that overlaps them is open. The test's own
// sessions, looping such reads, ran PostgreSQL out of shared memory now
// and then (SQLSTATE 53200) at 64 locks a transaction; the dashboard
// polled the same reads at the default isolation every second.
func TestReadsTakeNoPredicateLocks(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	if _, err := owner.Exec(ctx, "CREATE TABLE public.w (x int)"); err != nil {
		t.Fatal(err)
	}
	alterDatabase(t, owner, "default_transaction_isolation", "serializable")
	url := owner.Config().ConnString()
	pool := poolOn(t, url)
	// A SERIALIZABLE writer open across the reads: PostgreSQL keeps the
	// predicate locks of each SERIALIZABLE transaction that commits while
	// it runs.
	w, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO public.w VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	const locksSQL = "SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
	held := func() int {
		var n int
		if err := pool.QueryRow(ctx, locksSQL).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := held()
	if _, err := millrace.QueueCounts(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := millrace.JobByID(ctx, pool, 1); err != nil && !errors.Is(err, millrace.ErrJobNotFound) {
		t.Fatal(err)
	}
	if _, err := millrace.ReadStats(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Queues(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if n := held(); n != base {
		t.Errorf("the library's reads left %d predicate locks at a SERIALIZABLE default; want none", n-base)
	}
	// The SQL API's reads as SERIALIZABLE statements: each one's locks,
	// counted before its commit, at most docs/deploy.md's figure.
	for _, r := range []struct {
		sql  string
		most int
	}{
		{"SELECT count(*) FROM millrace.history", 104},
		{"SELECT count(*) FROM millrace.queue_counts()", 190},
		{"SELECT count(*) FROM millrace.jobs", 11},
	} {
		// pg_locks shows a committed transaction's kept locks under the
		// pid of its session: the read's are the ones it adds.
		const ownSQL = "SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock' AND pid = pg_backend_pid()"
		var n, before, after int
		err := pgx.BeginFunc(ctx, pool, func(rt pgx.Tx) error {
			if err := rt.QueryRow(ctx, ownSQL).Scan(&before); err != nil {
				return err
			}
			if err := rt.QueryRow(ctx, r.sql).Scan(&n); err != nil {
				return err
			}
			return rt.QueryRow(ctx, ownSQL).Scan(&after)
		})
		if err != nil {
			t.Fatal(err)
		}
		if own := after - before; own == 0 || own > r.most {
			t.Errorf("%s at SERIALIZABLE took %d predicate locks; docs/deploy.md says at most %d", r.sql, after-before, r.most)
		}
	}
	if n := held(); n-base < 104 {
		t.Errorf("the SQL reads at SERIALIZABLE left %d predicate locks behind while a writer overlaps them; want the ones they took", n-base)
	}
}

// TestSQLAPIUnderIsolationDefaults (issue 31.3, 31.4): with the database's
// default isolation at REPEATABLE READ or SERIALIZABLE, eight sessions
// call the SQL API of docs/guide.md at once while a client works the jobs
// and the ring turns: enqueue, enqueue of a unique job, cancel and retry
// as they are and as their error says to call them, pause and resume, the
// reads (the jobs and history views, queue_counts, ring_stats) and
// set_retention. Every caller gets a documented answer or a one-line
// error that says what to do; no job runs twice, none is lost, a job
// whose cancel answered "cancelled" never runs, and the eight retries of
// one job all answer the same. Under REPEATABLE READ, a cancel answered
// "cancelled before it ran" for jobs that then ran (10 of 300), and seven
// of eight concurrent retries raised a raw duplicate key.
func TestSQLAPIUnderIsolationDefaults(t *testing.T) {
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			ctx := context.Background()
			owner := newDB(t)
			alterDatabase(t, owner, "default_transaction_isolation", iso)
			url := owner.Config().ConnString()
			s := &seen{runs: map[int]int{}}
			pool := poolOn(t, url)
			client := startClient(t, pool, countingWorkers(s, 2*time.Millisecond), millrace.Config{
				Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
				RotateAfter: 200 * time.Millisecond, MaintenanceEvery: 50 * time.Millisecond})
			const sessions, each = 8, 30
			conns := make([]*pgx.Conn, sessions)
			for i := range conns {
				c, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close(context.Background()) })
				conns[i] = c
			}
			// A documented answer, or a one-line error whose SQLSTATE says
			// what kind of thing to do: call at READ COMMITTED (0A000), retry
			// (40001, 40P01; 57014: the leader cancelled a statement of a
			// session that kept reading the ring while a slot was past its
			// time, docs/deploy.md).
			answered := func(call string, err error) {
				var pe *pgconn.PgError
				switch {
				case err == nil:
				case errors.As(err, &pe) && (pe.Code == "0A000" || pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "57014") &&
					!strings.Contains(pe.Message, "\n"):
				case errors.As(err, &pe):
					t.Errorf("%s under %s: %v (hint: %s)", call, iso, err, pe.Hint)
				default:
					t.Errorf("%s under %s: %v", call, iso, err)
				}
			}
			// alive is c, or a new session in its place when pgx closed it:
			// the leader cancels at each partition it waits for, and a
			// second cancel that lands on a transaction's ROLLBACK makes
			// pgx close the connection (a failed ROLLBACK leaves it in no
			// known state). Nothing of that transaction was done.
			alive := func(c *pgx.Conn) *pgx.Conn {
				if !c.IsClosed() {
					return c
				}
				t.Logf("a session's connection was closed after a cancelled transaction end under %s; a new one goes on", iso)
				n, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Error(err)
					return c
				}
				t.Cleanup(func() { n.Close(context.Background()) })
				return n
			}
			inRC := func(c *pgx.Conn, sql string, args ...any) (string, error) {
				var out string
				err := pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
					return tx.QueryRow(ctx, sql, args...).Scan(&out)
				})
				return out, err
			}
			var (
				mu        sync.Mutex
				ids       = map[int64]int{} // job id -> args n
				cancelled = map[int]bool{}  // n of jobs whose cancel answered "cancelled"
			)
			var wg sync.WaitGroup
			for w, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						c = alive(c)
						n := w*each + i
						var id int64
						err := c.QueryRow(ctx, "SELECT millrace.enqueue('count', jsonb_build_object('n', $1::int))", n).Scan(&id)
						// This session reads the ring back to back: a cancel
						// the leader aimed at its last read may land on the
						// enqueue that followed (docs/deploy.md). Nothing of a
						// cancelled enqueue is done; it is sent again.
						for retry := 0; retry < 3 && isCode(err, "57014"); retry++ {
							err = c.QueryRow(ctx, "SELECT millrace.enqueue('count', jsonb_build_object('n', $1::int))", n).Scan(&id)
						}
						if err != nil {
							t.Errorf("enqueue under %s: %v", iso, err)
							return
						}
						mu.Lock()
						ids[id] = n
						mu.Unlock()
						// A unique job needs READ COMMITTED.
						_, err = c.Exec(ctx, "SELECT millrace.enqueue('count', '{\"n\": -1}', p_unique_key => 'u')")
						answered("enqueue of a unique job", err)
						if err == nil {
							t.Errorf("a unique job enqueued under %s", iso)
						}
						// Cancel as it is (refused), then as its error says.
						var out string
						err = c.QueryRow(ctx, "SELECT millrace.cancel($1)", id).Scan(&out)
						answered("cancel", err)
						if err == nil {
							t.Errorf("cancel under %s answered %q; want the error that asks for READ COMMITTED", iso, out)
						}
						if i%3 == 0 {
							out, err := inRC(c, "SELECT millrace.cancel($1)", id)
							answered("cancel at READ COMMITTED", err)
							c = alive(c)
							switch out {
							case "cancelled":
								mu.Lock()
								cancelled[n] = true
								mu.Unlock()
							case "", "cancelling", "finished", "unknown":
							default:
								t.Errorf("cancel answered %q", out)
							}
						}
						_, err = c.Exec(ctx, "SELECT millrace.pause('side')")
						answered("pause", err)
						_, err = c.Exec(ctx, "SELECT millrace.resume('side')")
						answered("resume", err)
						var x int64
						for _, q := range []string{"SELECT count(*) FROM millrace.jobs", "SELECT count(*) FROM millrace.history",
							"SELECT count(*) FROM millrace.queue_counts()", "SELECT rotations FROM millrace.ring_stats()"} {
							answered(q, c.QueryRow(ctx, q).Scan(&x))
						}
						_, err = c.Exec(ctx, "SELECT millrace.set_retention(NULL, NULL)")
						answered("set_retention", err)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			// Eight retries of one cancelled job at once: as they are (each
			// refused the same), then at READ COMMITTED (each the same job).
			var target int64
			mu.Lock()
			for id, n := range ids {
				if cancelled[n] {
					target = id
					break
				}
			}
			mu.Unlock()
			if target == 0 {
				t.Fatal("no cancel answered cancelled")
			}
			for _, rc := range []bool{false, true} {
				outs := make([]string, sessions)
				errs := make([]error, sessions)
				var rw sync.WaitGroup
				for w, c := range conns {
					rw.Add(1)
					go func() {
						defer rw.Done()
						for try := 0; try < 3; try++ { // a statement the leader cancelled (57014) is retried
							c = alive(c)
							if rc {
								outs[w], errs[w] = inRC(c, "SELECT millrace.retry($1)", target)
							} else {
								errs[w] = c.QueryRow(ctx, "SELECT millrace.retry($1)", target).Scan(&outs[w])
							}
							var pe *pgconn.PgError
							if !errors.As(errs[w], &pe) || pe.Code != "57014" {
								break
							}
						}
					}()
				}
				rw.Wait()
				for w := range outs {
					answered("retry", errs[w])
					if fmt.Sprint(outs[w], errs[w]) != fmt.Sprint(outs[0], errs[0]) {
						t.Errorf("retries of job %d (read committed: %v): %q %v and %q %v; want one answer", target, rc, outs[0], errs[0], outs[w], errs[w])
					}
				}
				if rc && !strings.HasPrefix(outs[0], "retried as job ") {
					t.Errorf("retry at READ COMMITTED: %q %v", outs[0], errs[0])
				}
				if !rc && (errs[0] == nil || !strings.Contains(errs[0].Error(), "READ COMMITTED")) {
					t.Errorf("retry under %s: %q %v; want the error that asks for READ COMMITTED", iso, outs[0], errs[0])
				}
			}
			mu.Lock()
			retriedN := ids[target]
			mu.Unlock()
			settle(t, owner, client, -2, s.ran, true)
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, n := range ids {
				want := 1
				if cancelled[n] && n != retriedN {
					want = 0
				}
				if s.runs[n] != want {
					t.Errorf("job of n=%d (cancelled: %v) ran %d times; want %d", n, cancelled[n], s.runs[n], want)
				}
			}
		})
	}
}

// isCode reports whether err is a server error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
