package millrace_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"go.uber.org/goleak"
)

type ctxArgs struct {
	Fail bool `json:"fail,omitempty"`
}

func (ctxArgs) Kind() string { return "ctx_value" }

type ctxKey struct{}

// The values of the context given to Start reach every job's context and
// ErrorHandler's, and Start's context ending does not stop the client;
// once Stop returns, no goroutine of the client is left.
func TestStartContextReachesJobsAndStopLeavesNothing(t *testing.T) {
	pool := newDB(t)
	// The pool's own goroutines, and the test runner's, were there before.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	got := make(chan any, 2)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[ctxArgs]) error {
		got <- ctx.Value(ctxKey{})
		if j.Args.Fail {
			return errors.New("fails once")
		}
		return nil
	}))
	handled := make(chan any, 1)
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 2}},
		ErrorHandler: func(ctx context.Context, _ *millrace.JobError) {
			select {
			case handled <- ctx.Value(ctxKey{}):
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancelStart := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "from Start"))
	if err := c.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	cancelStart() // bounds Start only
	if _, err := c.Insert(context.Background(), ctxArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(context.Background(), ctxArgs{Fail: true}, &millrace.InsertOpts{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case v := <-got:
			if v != "from Start" {
				t.Errorf("a job's context has %v for Start's value", v)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the jobs did not run after Start's context ended")
		}
	}
	select {
	case v := <-handled:
		if v != "from Start" {
			t.Errorf("ErrorHandler's context has %v for Start's value", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ErrorHandler was not called")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
