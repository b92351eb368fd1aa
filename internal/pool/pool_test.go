package pool

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// wait is how long a test waits for a condition: a bound on a broken run,
// not a measure.
const wait = 30 * time.Second

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// env is what the tests of a role that talks to the database share: a
// database at the current schema (testkit), a store on it whose
// statements are traced, and a registered process identity.
type env struct {
	t     *testing.T
	db    *pgxpool.Pool
	store *storage.Store
	owner int32
	trace *tracer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = testkit.MaxConns
	tr := &tracer{}
	cfg.ConnConfig.Tracer = tr
	db, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := &env{t: t, db: db, store: &storage.Store{Pool: db}, trace: tr}
	e.owner = e.register()
	return e
}

// register registers a process identity.
func (e *env) register() int32 {
	e.t.Helper()
	id, err := e.store.Register(context.Background(), "p", "h", 1, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// enqueue inserts a job of queue q (kind k, 3 attempts), without a
// notification: only the claimer's own claims find it.
func (e *env) enqueue() int64 {
	e.t.Helper()
	id, err := e.store.Enqueue(context.Background(), e.db, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// claimNew enqueues n jobs and claims them, under the env's identity, as
// one batch (none of them marked started).
func (e *env) claimNew(n int) *storage.Batch {
	e.t.Helper()
	for range n {
		e.enqueue()
	}
	bs, err := e.store.Claim(context.Background(), "q", e.owner, 1, false, storage.Limits{MaxJobs: n, MaxBytes: 1 << 20})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(bs) != 1 || len(bs[0].Jobs) != n {
		e.t.Fatalf("claimed %+v, want one batch of %d jobs", bs, n)
	}
	return bs[0]
}

// state is where job id stands (millrace.job_state).
func (e *env) state(id int64) string {
	e.t.Helper()
	st, err := e.store.JobState(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// pool makes a pool on the env's store under its identity, queue q with
// one worker unless cfg says otherwise, logs discarded; it is not started.
func (e *env) pool(cfg Config) *Pool {
	cfg.Store = e.store
	if cfg.Queues == nil {
		cfg.Queues = map[string]int{"q": 1}
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	p := New(cfg)
	p.SetOwner(e.owner)
	return p
}

// start starts p and returns its Stop (with a generous deadline). If the
// test ends without calling it, p is stopped with StopAndCancel (a failed
// test does not wait for its jobs).
func (e *env) start(p *Pool) (stop func() error) {
	p.Start(context.Background())
	var once sync.Once
	var err error
	stopWith := func(f func(context.Context) error) error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err = f(ctx)
		})
		return err
	}
	e.t.Cleanup(func() { stopWith(p.StopAndCancel) })
	return func() error { return stopWith(p.Stop) }
}

// waitFor fails the test if cond does not hold within wait.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	testkit.WaitFor(e.t, what, wait, cond)
}

// tracer records the statements of the protocol a store runs (most are
// sent in a pipeline, see storage.RunTx; a peek alone), so that a test can
// wait for a claim or a start mark rather than sleep.
type tracer struct {
	mu   sync.Mutex
	seen []traced
}

// traced is one statement: its SQL, its arguments, how many rows it
// returned, its error.
type traced struct {
	sql  string
	args []any
	rows int64
	err  error
}

// queryKey keys the statement a TraceQueryStart saw in its context.
type queryKey struct{}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, queryKey{}, d)
}

func (tr *tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	q, _ := ctx.Value(queryKey{}).(pgx.TraceQueryStartData)
	tr.mu.Lock()
	tr.seen = append(tr.seen, traced{sql: q.SQL, args: q.Args, rows: d.CommandTag.RowsAffected(), err: d.Err})
	tr.mu.Unlock()
}

func (tr *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (tr *tracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	tr.mu.Lock()
	tr.seen = append(tr.seen, traced{sql: d.SQL, args: d.Args, rows: d.CommandTag.RowsAffected(), err: d.Err})
	tr.mu.Unlock()
}

func (tr *tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// calls returns the statements that succeeded calling function fn of
// schema millrace, in the order they ended.
func (tr *tracer) calls(fn string) []traced {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []traced
	for _, c := range tr.seen {
		if c.err == nil && strings.Contains(c.sql, "millrace."+fn+"(") {
			out = append(out, c)
		}
	}
	return out
}

// claims returns the claims that succeeded, in the order they ended:
// statements calling millrace.claim_start or millrace.claim itself (see
// storage.ClaimSeen), each with rows less the last one, which says what
// the claim saw.
func (tr *tracer) claims() []traced {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []traced
	for _, c := range tr.seen {
		if c.err == nil && (strings.Contains(c.sql, "millrace.claim_start(") || strings.Contains(c.sql, "millrace.claim(")) {
			if strings.Contains(c.sql, "UNION ALL") {
				c.rows--
			}
			out = append(out, c)
		}
	}
	return out
}

// emptyClaims is how many claims found nothing: after each, the claimer
// waits to be woken (or for Config.Poll).
func (tr *tracer) emptyClaims() int {
	n := 0
	for _, c := range tr.claims() {
		if c.rows == 0 {
			n++
		}
	}
	return n
}

// TestNoJobStartsWhileTheLeaseIsInDoubt: a job waits in the process's
// buffer (claimed while another runs) when the process stops being sure
// it is alive (Fresh says no: its lease was last renewed half a lease ago
// or more, as after a SIGSTOP). The job does not start, even once its
// worker is free, until a heartbeat says the process is alive; then it
// runs.
func TestNoJobStartsWhileTheLeaseIsInDoubt(t *testing.T) {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := schema.Up(ctx, db, 0); err != nil {
		t.Fatal(err)
	}
	s := &storage.Store{Pool: db}
	owner, err := s.Register(ctx, "p", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func() int64 {
		t.Helper()
		id, err := s.Enqueue(ctx, db, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var fresh atomic.Bool
	fresh.Store(true)
	var claimed atomic.Int64
	started := make(chan int64, 4)
	release := make(chan struct{})
	first := enqueue()
	p := New(Config{Store: s, Queues: map[string]int{"q": 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Fresh: fresh.Load, OnClaim: func(string, time.Duration, int) { claimed.Add(1) },
		Handle: func(ctx context.Context, run *Run) error {
			started <- run.Job.ID
			if run.Job.ID == first {
				<-release
			}
			return nil
		}})
	p.SetOwner(owner)
	p.Start(context.Background())
	defer p.Stop(ctx)
	wait := func(what string, cond func() bool) {
		t.Helper()
		testkit.WaitFor(t, what, 30*time.Second, cond)
	}
	if id := <-started; id != first {
		t.Fatalf("job %d started first, want %d", id, first)
	}
	second := enqueue()
	p.Wake("q")
	wait("the second job to be claimed into the buffer", func() bool { return claimed.Load() == 2 })
	fresh.Store(false)
	close(release)
	wait("the first job's outcome", func() bool {
		var n int
		db.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", first).Scan(&n)
		return n == 1
	})
	// The worker is free; the second job must still wait.
	select {
	case id := <-started:
		t.Fatalf("job %d started while the process's lease was in doubt", id)
	case <-time.After(300 * time.Millisecond):
	}
	fresh.Store(true)
	select {
	case id := <-started:
		if id != second {
			t.Fatalf("job %d started, want %d", id, second)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second job did not start once the lease was renewed")
	}
}

// next is the next value on ch, failing the test if none comes within
// wait.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out after %v waiting for %s", wait, what)
		panic("unreachable")
	}
}
