package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// bare is a pool whose workers' contexts exist but which runs no
// goroutine: a test calls run itself and reads the acks run queues.
func bare(t *testing.T, cfg Config) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	p := New(cfg)
	p.claimCtx, p.stopClaims = context.WithCancel(context.Background())
	p.jobCtx, p.cancelJobs = context.WithCancel(context.Background())
	t.Cleanup(func() { p.stopClaims(); p.cancelJobs() })
	return p
}

// leased is job j alone in a batch held by identity 1.
func leased(j storage.Job) item {
	b := &batch{Batch: &storage.Batch{Queue: "q", TickID: 1, Token: 1}, owner: 1}
	b.remaining.Store(1)
	return item{batch: b, job: j}
}

// ackOf is the ack run queued for its job, and checks that the batch's
// done mark follows it.
func ackOf(t *testing.T, p *Pool) storage.Ack {
	t.Helper()
	if len(p.acks) != 2 {
		t.Fatalf("%d entries queued for the acker, want the job's ack and its batch's done mark", len(p.acks))
	}
	a := <-p.acks
	if done := <-p.acks; done.State != doneMark {
		t.Fatalf("the second entry queued is %+v, want the batch's done mark", done)
	}
	return a
}

// TestTimeoutEndsTheJobsContext: a job past its timeout (its own, or else
// its kind's) sees its context cancelled with ErrTimeout as the cause; the
// attempt fails with an error that says it timed out.
func TestTimeoutEndsTheJobsContext(t *testing.T) {
	for _, tc := range []struct {
		name        string
		job, policy time.Duration
	}{
		{"the job's own timeout", 20 * time.Millisecond, time.Hour},
		{"its kind's timeout", 0, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cause error
			p := bare(t, Config{
				Policy: func(kind string) KindPolicy { return KindPolicy{Timeout: tc.policy} },
				Handle: func(ctx context.Context, run *Run) error {
					<-ctx.Done()
					cause = context.Cause(ctx)
					return ctx.Err()
				}})
			p.run(leased(storage.Job{ID: 7, Kind: "k", MaxAttempts: 3, Timeout: tc.job}))
			if !errors.Is(cause, ErrTimeout) {
				t.Fatalf("the job's context ended with cause %v, want ErrTimeout", cause)
			}
			a := ackOf(t, p)
			if a.State != storage.AckRetried || !strings.HasPrefix(a.Err, "millrace: job timed out") {
				t.Fatalf("ack state %d, error %q; want retried, with an error that says the job timed out", a.State, a.Err)
			}
			if a.Started.IsZero() || a.Finished.Before(a.Started) {
				t.Fatalf("the attempt is timed %v to %v", a.Started, a.Finished)
			}
			if len(p.running) != 0 {
				t.Fatalf("%d jobs still listed as running", len(p.running))
			}
		})
	}
}

// TestAJobIgnoringItsContextIsAbandoned: a handler that does not return
// within its timeout and the grace after it frees its worker: the attempt
// fails (errAbandoned) and is counted as abandoned.
func TestAJobIgnoringItsContextIsAbandoned(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	p := bare(t, Config{TimeoutGrace: 20 * time.Millisecond, Handle: func(ctx context.Context, run *Run) error {
		<-hold // ignores its context
		return nil
	}})
	p.run(leased(storage.Job{ID: 7, Kind: "k", MaxAttempts: 3, Timeout: 20 * time.Millisecond}))
	a := ackOf(t, p)
	if a.State != storage.AckRetried || !strings.Contains(a.Err, errAbandoned.Error()) {
		t.Fatalf("ack state %d, error %q; want retried, abandoned", a.State, a.Err)
	}
	if n := p.abandoned.Load(); n != 1 {
		t.Fatalf("%d jobs counted as abandoned, want 1", n)
	}
}

// TestAPanicFailsTheAttempt: a handler's panic is recovered and fails the
// attempt; its error holds the panic's value and stack.
func TestAPanicFailsTheAttempt(t *testing.T) {
	p := bare(t, Config{Handle: func(ctx context.Context, run *Run) error { panic("boom") }})
	p.run(leased(storage.Job{ID: 7, Kind: "k", MaxAttempts: 3}))
	a := ackOf(t, p)
	if a.State != storage.AckRetried || !strings.HasPrefix(a.Err, "panic: boom\n") || !strings.Contains(a.Err, "goroutine") {
		t.Fatalf("ack state %d, error %q; want retried, with the panic and its stack", a.State, a.Err)
	}
}

// TestAJobWhoseBatchWasReleasedDoesNotStart: a job waits in the process
// for a busy worker; meanwhile its batch is released and another process
// adopts it. When the worker is free, the marker finds the batch fenced:
// the job does not start here, and OnFenced is told. The same holds when
// the claim counted the busy worker as idle (it had just taken a job and
// not yet said so) and so recorded the job's start with the claim.
func TestAJobWhoseBatchWasReleasedDoesNotStart(t *testing.T) {
	t.Run("busy", func(t *testing.T) { testReleasedJobDoesNotStart(t, false) })
	t.Run("counted idle", func(t *testing.T) { testReleasedJobDoesNotStart(t, true) })
}

func testReleasedJobDoesNotStart(t *testing.T, countedIdle bool) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.enqueue()
	started := make(chan int64, 4)
	release := make(chan struct{})
	fenced := make(chan int64, 4)
	p := e.pool(Config{Poll: time.Hour, OnFenced: func(tick int64) { fenced <- tick },
		Handle: func(ctx context.Context, run *Run) error {
			started <- run.Job.ID
			if run.Job.ID == first {
				select { // a failed test stops the pool: the job then ends
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		}})
	stop := e.start(p)
	if got := next(t, started, "a job to start"); got != first {
		t.Fatalf("job %d started, want %d", got, first)
	}
	if countedIdle {
		// The window between a worker's taking a job and its count of idle
		// workers going down, held open.
		p.queues["q"].idle.Add(1)
	}
	second := e.enqueue()
	p.Wake("q")
	e.waitFor("the second job to wait in the process", func() bool { return len(p.queues["q"].jobs) == 1 })
	if n, err := e.store.Release(ctx, e.owner); err != nil || n != 2 {
		t.Fatalf("released %d batches (%v), want both", n, err)
	}
	other := e.register()
	var tick, firstTick int64
	for req := int64(1); ; req++ {
		bs, err := e.store.Claim(ctx, "q", other, req, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			break
		}
		for _, b := range bs {
			for _, j := range b.Jobs {
				switch j.ID {
				case first:
					firstTick = b.TickID
				case second:
					tick = b.TickID
				}
			}
		}
	}
	if tick == 0 {
		t.Fatalf("the other process did not adopt the second job's batch")
	}
	close(release)
	// The first job's ack is fenced too (its batch went with the other).
	for got := int64(0); got != tick; {
		select {
		case got = <-fenced:
			if got != tick && got != firstTick {
				t.Fatalf("OnFenced told of batch %d, want %d (the waiting job's) or %d (the first job's)", got, tick, firstTick)
			}
		case <-time.After(wait):
			t.Fatal("OnFenced was not told of the waiting job's batch")
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-started:
		t.Fatalf("job %d started after its batch went to another process", got)
	default:
	}
}

// TestStartMarksWaitForTheRoundInFlight: the jobs that ask for their
// start marks while a round of marks is in flight wait for it and share
// the next round, so that a running limit's slots, which free and ask
// again within a round trip, do not each pay a round (and a commit). The
// first round is held in flight by the batch's fence lock, held by
// another session; four jobs ask one after another meanwhile.
func TestStartMarksWaitForTheRoundInFlight(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 5
	sb := e.claimNew(n)
	b := &batch{Batch: sb, owner: e.owner}
	b.remaining.Store(n)
	fence, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fence.Rollback(ctx)
	if _, err := fence.Exec(ctx, "SELECT pg_advisory_xact_lock(millrace.fence_space(), ($1 % 2147483647)::int)", sb.TickID); err != nil {
		t.Fatal(err)
	}
	p := e.pool(Config{Queues: map[string]int{}})
	stop := e.start(p)
	reqs := make([]startReq, n)
	for i := range reqs {
		reqs[i] = startReq{it: &item{batch: b, job: sb.Jobs[i]}, ok: make(chan bool, 1)}
	}
	waiting := func() int {
		var k int
		// This database's waits for the batch's fence lock (the
		// cluster may be shared with other tests).
		if err := e.db.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND objid = ($1 % 2147483647)::oid`, sb.TickID).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	p.starts <- reqs[0]
	e.waitFor("the first round of marks to wait for the fence lock", func() bool { return waiting() == 1 })
	// The second is taken by the marker before the others ask: the
	// marker then waits for a free round (every round is in flight), or,
	// were rounds not to wait, sends it alone (a second wait for the
	// lock).
	p.starts <- reqs[1]
	e.waitFor("the marker to take the second request and wait for a round, or send it", func() bool {
		return len(p.starts) == 0 && (len(p.markSlots) == cap(p.markSlots) || waiting() == 2)
	})
	for _, r := range reqs[2:] {
		p.starts <- r
	}
	if err := fence.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if !next(t, r.ok, "a job's answer") {
			t.Fatalf("job %d may not start, want it to", i)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	marks := e.trace.calls("mark_started")
	if len(marks) != 2 {
		t.Fatalf("%d rounds of start marks, want 2: the first, and one for the %d jobs that asked while it was in flight", len(marks), n-1)
	}
	if jobs := marks[1].args[3].([]int64); len(jobs) != n-1 {
		t.Fatalf("the second round marked jobs %v, want %d", jobs, n-1)
	}
}
