package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"go.uber.org/goleak"
)

// TestStopGivesUpOutcomesItCannotWrite: when the outcome of a finished job
// cannot be written (here the database pool is closed under the acker,
// which retries what looks like a lost connection), Stop returns by its
// deadline with an error and leaves no goroutine behind: the acker gives
// up (the job runs again elsewhere, as after a crash) instead of retrying
// after Stop returned.
func TestStopGivesUpOutcomesItCannotWrite(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	e.enqueue()
	started := make(chan int64, 1)
	release := make(chan struct{})
	p := e.pool(Config{Poll: time.Hour, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		<-release
		return nil
	}})
	p.Start(context.Background())
	next(t, started, "the job to start")
	e.db.Close()
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := p.Stop(ctx); err == nil {
		t.Fatal("Stop returned nil with the job's outcome unwritten")
	}
}

// TestStopInTime: Stop, called while a job runs and another waits in the
// process for the busy worker, returns nil once the running job returns
// (its outcome written); the waiting job never starts here, and its batch
// is released to any claimer of the queue.
func TestStopInTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.enqueue()
	started := make(chan int64, 4)
	release := make(chan struct{})
	p := e.pool(Config{Poll: time.Hour, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		if run.Job.ID == first {
			select { // a failed test stops the pool: the job then ends
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}})
	stop := e.start(p) // its deadline: wait
	if got := next(t, started, "the first job to start"); got != first {
		t.Fatalf("job %d started, want %d", got, first)
	}
	second := e.enqueue()
	p.Wake("q")
	e.waitFor("the second job to wait in the process", func() bool { return len(p.queues["q"].jobs) == 1 })

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	e.waitFor("Stop to stop the claims", func() bool { return p.claimCtx.Err() != nil })
	close(release)
	if err := next(t, stopped, "Stop to return"); err != nil {
		t.Fatalf("Stop returned %v, want nil: every job returned in time", err)
	}
	if st := e.state(first); st != "completed" {
		t.Fatalf("the job that returned before Stop's deadline is %q, want completed", st)
	}
	select {
	case got := <-started:
		t.Fatalf("job %d started after Stop", got)
	default:
	}
	bs, err := e.store.Claim(ctx, "q", e.register(), 1, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || len(bs[0].Jobs) != 1 || bs[0].Jobs[0].ID != second {
		t.Fatalf("another process claimed %+v, want the batch of job %d that Stop released", bs, second)
	}
}

// TestStopCancelsJobsBeforeItsDeadline: a job still running as Stop's
// deadline nears has its context cancelled a grace before it; a job that
// honours it returns in time, Stop returns nil, and the attempt cut short
// by the shutdown writes no outcome.
func TestStopCancelsJobsBeforeItsDeadline(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue()
	p, started, causes := cancellable(e, Config{Poll: time.Hour, TimeoutGrace: time.Second})
	p.Start(context.Background())
	next(t, started, "the job to start")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.Stop(ctx)
	if err != nil {
		t.Fatalf("Stop returned %v, want nil: the job returned once its context was cancelled", err)
	}
	if c := next(t, causes, "the job's context to end"); !errors.Is(c, context.Canceled) {
		t.Fatalf("the job's context ended with cause %v, want context.Canceled", c)
	}
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM millrace.history WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the attempt cut short by Stop wrote %d outcomes, want none", n)
	}
}

// TestAbandonStopsTheJobsOfALostIdentity: the jobs running under an
// identity the process lost see their context end with ErrIdentityLost,
// and their attempts write no outcome; the jobs of another identity run
// on.
func TestAbandonStopsTheJobsOfALostIdentity(t *testing.T) {
	e := newEnv(t)
	id := e.enqueue()
	p, started, causes := cancellable(e, Config{Poll: time.Hour})
	stop := e.start(p)
	next(t, started, "the job to start")
	if n := p.Abandon(e.owner + 1); n != 0 {
		t.Fatalf("Abandon stopped %d jobs of an identity that runs none", n)
	}
	lost := e.owner
	p.SetOwner(e.register())
	if p.Owner() == lost {
		t.Fatal("SetOwner did not change the identity")
	}
	if n := p.Abandon(lost); n != 1 {
		t.Fatalf("Abandon stopped %d jobs, want 1", n)
	}
	if c := next(t, causes, "the job's context to end"); !errors.Is(c, ErrIdentityLost) {
		t.Fatalf("the job's context ended with cause %v, want ErrIdentityLost", c)
	}
	e.waitFor("the job's worker to finish", func() bool {
		p.runMu.Lock()
		defer p.runMu.Unlock()
		return len(p.running) == 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM millrace.history WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the abandoned attempt wrote %d outcomes, want none", n)
	}
}

// TestNewFillsTheDefaults: a Config's unset fields get their defaults.
func TestNewFillsTheDefaults(t *testing.T) {
	p := New(Config{Queues: map[string]int{"q": 3}})
	c := p.cfg
	if c.Logger == nil || c.Backoff == nil || c.Poll != time.Second || c.FlushDelay != DefaultFlushDelay || c.KeyFlushDelay != 5*time.Millisecond ||
		c.MaxBatchJobs != 1000 || c.MaxBatchBytes != 8<<20 || c.CancelPoll != time.Second || c.TimeoutGrace != 2*time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	if q := p.queues["q"]; q == nil || q.workers != 3 || cap(q.jobs) != 3 {
		t.Fatalf("queue q: %+v, want 3 workers and room for 3 jobs", q)
	}
	if p.Owner() != 0 {
		t.Fatalf("a new pool has identity %d, want none", p.Owner())
	}
}
