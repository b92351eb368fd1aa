// The gate: a queue's running limit in the process, its slots.

package pool

import (
	"context"
	"sync"
)

// gate lets at most slots of a queue's jobs run at once in the process
// while the queue has a running limit: the slots are what the process
// holds of the limit (millrace.hold), as its last claim wrote them. A job
// in hand beyond them (the claim's buffer) waits here for one of them, in
// the order they came, and a freed slot starts the next without a claim.
// Without a limit the gate only counts what runs.
type gate struct {
	mu      sync.Mutex
	limited bool
	slots   int
	running int
	waiting []chan struct{} // a slot is handed over by closing one
}

// enter takes a slot for a job about to start, waiting for one while the
// process's slots are all taken; false when ctx ended first.
func (g *gate) enter(ctx context.Context) bool {
	g.mu.Lock()
	if !g.limited || (g.running < g.slots && len(g.waiting) == 0) {
		g.running++
		g.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	g.waiting = append(g.waiting, ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := indexOf(g.waiting, ch); i >= 0 {
		g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
		return false
	}
	// Handed a slot as ctx ended: give it on.
	g.running--
	g.handOn()
	return false
}

// leave gives back the slot of a job that ended (or did not start).
func (g *gate) leave() {
	g.mu.Lock()
	g.running--
	g.handOn()
	g.mu.Unlock()
}

// set records what a claim said: whether the queue has a running limit,
// and the process's slots of it.
func (g *gate) set(limited bool, slots int) {
	g.mu.Lock()
	g.limited, g.slots = limited, slots
	g.handOn()
	g.mu.Unlock()
}

// handOn starts the waiting jobs that fit now, oldest first.
func (g *gate) handOn() {
	for len(g.waiting) > 0 && (!g.limited || g.running < g.slots) {
		g.running++
		close(g.waiting[0])
		g.waiting = g.waiting[1:]
	}
}

// state returns whether the queue has a running limit, the process's
// slots, and how many of them are free now (at most n; without a limit,
// n).
func (g *gate) state(n int) (limited bool, slots, free int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.limited {
		return false, g.slots, n
	}
	return true, g.slots, min(n, max(g.slots-g.running-len(g.waiting), 0))
}

func indexOf(s []chan struct{}, ch chan struct{}) int {
	for i, c := range s {
		if c == ch {
			return i
		}
	}
	return -1
}
