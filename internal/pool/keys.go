// The key gate: a process's slots of each key of a queue's per-key limit.

package pool

import "sync"

// keyGate holds, for each key of a queue's per-key limit, this process's
// slots of the key (as its newest claim of a job of the key wrote them),
// the key's jobs running here, those in hand, and those that wait for a
// slot: a claim may take a key's jobs beyond the process's slots (a
// buffer, storage.Job.KeyWaits) when the process holds the key, and each
// starts when a job of the key ends here, without going back to the
// database. A key is forgotten once the process holds none of its jobs.
type keyGate struct {
	mu   sync.Mutex
	keys map[string]*keyState
}

// keyState is one key's slots and jobs in the process.
type keyState struct {
	slots, running, held int
	parked               []item // waiting for a slot, oldest first
}

// claimed counts in a job of key the claim took, and the process's slots
// of the key as the claim wrote them.
func (g *keyGate) claimed(key string, slots int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		g.keys = map[string]*keyState{}
	}
	k := g.keys[key]
	if k == nil {
		k = &keyState{}
		g.keys[key] = k
	}
	k.slots = slots
	k.held++
}

// admit is the claimer's: it counts in a job of the claim that starts
// now (true: running here under a slot of its key), or parks it until a
// job of its key ends here (false). A job the claim gave a slot (not
// KeyWaits) starts while the key has a free slot, before any job that
// waits: the claim marked it started. One that waits starts now only when
// a slot is free and none waits before it. Counting at the claim, not when
// a worker takes the job, keeps a waiting job from taking the slot of a
// job the claim marked started, which would then wait unstarted with its
// start recorded (its attempt charged if the process died).
func (g *keyGate) admit(it item) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.keys[it.job.Key]
	if k == nil {
		return true // not counted in by claimed: no slots to keep
	}
	if k.running < k.slots && (!it.job.KeyWaits || len(k.parked) == 0) {
		k.running++
		return true
	}
	k.parked = append(k.parked, it)
	return false
}

// begin starts it when its key has a free slot here (true); otherwise
// it waits, parked, for a job of its key to end (false).
func (g *keyGate) begin(it item) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.keys[it.job.Key]
	if k == nil || k.running < k.slots {
		if k != nil {
			k.running++
		}
		return true
	}
	k.parked = append(k.parked, it)
	return false
}

// end counts out a job of key that started here and ended (or will not
// run after all), and hands back the oldest parked job of the key when a
// slot is free for it: it is then counted as running.
func (g *keyGate) end(key string) (item, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.keys[key]
	if k == nil {
		return item{}, false
	}
	k.running--
	k.held--
	if len(k.parked) > 0 && k.running < k.slots {
		it := k.parked[0]
		k.parked = k.parked[1:]
		k.running++
		return it, true
	}
	if k.held <= 0 {
		delete(g.keys, key)
	}
	return item{}, false
}

// drop counts out a job of key that never began here (cancelled at its
// claim).
func (g *keyGate) drop(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k := g.keys[key]; k != nil {
		if k.held--; k.held <= 0 && k.running <= 0 && len(k.parked) == 0 {
			delete(g.keys, key)
		}
	}
}
