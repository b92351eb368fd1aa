package pool

import (
	"context"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/testkit"
)

// TestGateHoldsJobsBeyondTheSlots: with two slots a third job waits until
// one of the two leaves, and the waiting ones start in the order they
// came; more slots, or no limit, let the waiting ones start; a job whose
// wait ends with its context takes no slot.
func TestGateHoldsJobsBeyondTheSlots(t *testing.T) {
	ctx := context.Background()
	g := &gate{}
	g.set(true, 2)
	for i := range 2 {
		if !g.enter(ctx) {
			t.Fatalf("job %d of two did not start", i)
		}
	}
	started := make(chan int, 3)
	for i := range 3 {
		go func() {
			if g.enter(ctx) {
				started <- i
			}
		}()
		waitWaiting(t, g, i+1) // in order: each is queued before the next
	}
	select {
	case i := <-started:
		t.Fatalf("job %d started with both slots taken", i)
	case <-time.After(20 * time.Millisecond):
	}
	g.leave()
	if i := <-started; i != 0 {
		t.Fatalf("job %d started first; want the first to wait", i)
	}
	g.set(true, 3) // one more slot
	if i := <-started; i != 1 {
		t.Fatalf("job %d started second; want the second to wait", i)
	}
	g.set(false, 0) // the limit is gone
	if i := <-started; i != 2 {
		t.Fatalf("job %d started third; want the third", i)
	}
	if _, _, free := g.state(5); free != 5 {
		t.Fatalf("free = %d without a limit; want 5", free)
	}

	// A wait that ends with its context leaves the slots as they were.
	g = &gate{}
	g.set(true, 1)
	g.enter(ctx)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan bool)
	go func() { done <- g.enter(cctx) }()
	waitWaiting(t, g, 1)
	cancel()
	if <-done {
		t.Fatal("a job started after its context ended")
	}
	g.leave()
	if _, _, free := g.state(5); free != 1 {
		t.Fatalf("free = %d after the only job left; want 1", free)
	}
}

func waitWaiting(t *testing.T, g *gate, n int) {
	t.Helper()
	testkit.WaitFor(t, "jobs waiting at the gate", 5*time.Second, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.waiting) == n
	})
}
