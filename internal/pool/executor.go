// The executor: a worker takes a job, has its start recorded, and runs its
// handler within its timeout, recovering a panic.

package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// errTimeout is the cause of a job's context ended by its timeout.
var errTimeout = errors.New("millrace: job timed out")

// ErrTimeout is the context cause a job sees when its timeout passed.
var ErrTimeout = errTimeout

func (p *Pool) work(q *queue) {
	defer p.workersWG.Done()
	for {
		var it item
		q.idle.Add(1)
		select {
		case it = <-q.start:
			// Counted out of the idle workers by the claimer that sent it.
		case it = <-q.jobs:
			q.idle.Add(-1)
			select {
			case q.taken <- struct{}{}:
			default:
			}
		case <-p.claimCtx.Done():
			q.idle.Add(-1)
			return
		}
		if p.claimCtx.Err() != nil {
			return // stopping: no job starts after Stop; the batch is released
		}
		if it.job.Key != "" && !it.admitted && !q.keys.begin(it) {
			continue // it waits for a slot of its key, parked: the job that frees one runs it
		}
		for {
			var ok bool
			if it, ok = p.runItem(q, it); !ok {
				return
			}
			if it.batch == nil {
				break
			}
		}
	}
}

// runItem starts and runs it, a job of q, and returns the next job to run
// on this worker: a job of the same key that waited here for the slot it
// freed (nil batch: none). false: the pool is stopping.
func (p *Pool) runItem(q *queue, it item) (item, bool) {
	key := it.job.Key
	next := func() item {
		if key == "" {
			return item{}
		}
		n, _ := q.keys.end(key)
		return n
	}
	if p.claimCtx.Err() != nil {
		return item{}, false // stopping: no job starts after Stop; the batch is released
	}
	for p.cfg.Fresh != nil && !p.cfg.Fresh() && p.claimCtx.Err() == nil {
		// The process may be dead in the others' eyes (it was stopped
		// or cut off for half its lease or more): the next heartbeat
		// says whether the batch is still its own.
		time.Sleep(20 * time.Millisecond)
	}
	if it.batch.owner != p.Owner() {
		p.free(q) // leased under a lost identity: released to other claimers
		return next(), true
	}
	if !q.gate.enter(p.claimCtx) {
		return item{}, false // stopping while it waited for a slot: the batch is released
	}
	if !it.started && !p.markStarted(&it) {
		q.gate.leave()
		if it.job.Key != "" {
			// Its slot of a per-key limit comes back with the next flush.
			p.send(storage.Ack{Batch: it.batch.Batch, Job: &it.job, State: storage.AckKeyFreed})
		}
		p.free(q) // its batch was released meanwhile: it runs elsewhere
		return next(), true
	}
	p.run(it)
	q.gate.leave()
	p.free(q)
	return next(), true
}

// free counts a job of q that no longer runs here (it ended, or will not
// start) out of what the process has in hand of q, and wakes the claimer
// of a queue that has a rate limit whose last claim took all its idle
// workers allowed (its claims wait for an idle worker), or whose running
// limit bound its last claim once the jobs in hand fit its slots (the
// next claim refills the buffer; until then a freed slot goes to a job in
// hand). A job that ended is no longer running, whether
// or not its outcome is written yet; if the process dies before that, the
// job runs again only once the process's lease has run out, when the
// process holds nothing.
func (p *Pool) free(q *queue) {
	held := q.held.Add(-1)
	if (q.rated.Load() && q.short.Load()) || (q.bound.Load() && !q.waits(held)) {
		p.Wake(q.name)
	}
}

// waits says whether the jobs of q in hand (held) leave too little of the
// process's slots of its running limit for a claim: more than the slots
// and half the buffer (the buffer then has room for half of it); under a
// rate limit, which has no buffer, jobs in hand and fewer than half the
// slots free (a claim per freed slot kept the queue's claim lock busy).
// The next claim of a queue the limit bound waits until they do not.
func (q *queue) waits(held int64) bool {
	limited, slots, _ := q.gate.state(0)
	if limited && q.rated.Load() {
		return held > 0 && int64(slots)-held < int64(max(slots/2, 1))
	}
	return limited && held > int64(slots+min(q.maxJobs, bufferPerSlot*slots)/2)
}

// bufferPerSlot is the claim's bound on the buffer: jobs per slot of the
// process (millrace.claim).
const bufferPerSlot = 8

func (p *Pool) run(it item) {
	run := &Run{Job: &it.job, Batch: it.batch.Batch, Owner: it.batch.owner, Started: p.cfg.Now()}
	var pol KindPolicy
	if p.cfg.Policy != nil {
		pol = p.cfg.Policy(it.job.Kind)
	}
	ctx, cancel := context.WithCancelCause(p.jobCtx)
	timeout := pol.Timeout
	if it.job.Timeout > 0 {
		timeout = it.job.Timeout
	}
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			cancel(errTimeout)
			// A job that ignores its context keeps its worker; say so. If it
			// never returns, its batch is released after StuckAfter.
			p.cfg.Logger.Warn("millrace: job passed its timeout; its context is cancelled", "job", it.job.ID,
				"kind", it.job.Kind, "timeout", timeout)
		})
	}
	p.runMu.Lock()
	p.running[it.job.ID] = &running{cancel: cancel, owner: it.batch.owner}
	p.runMu.Unlock()
	var err error
	if timeout > 0 {
		err = p.callWithin(ctx, run, timeout+p.cfg.TimeoutGrace)
	} else {
		err = p.call(ctx, run)
	}
	if timer != nil {
		timer.Stop()
	}
	cause := context.Cause(ctx)
	cancel(nil)
	p.runMu.Lock()
	delete(p.running, it.job.ID)
	p.runMu.Unlock()
	if err != nil && p.stopping.Load() && p.jobCtx.Err() != nil && !errors.Is(cause, errCancelRequested) && !errors.Is(cause, errTimeout) {
		// Cut short by shutdown: not an attempt. No ack; the job is
		// released with the lease and runs again elsewhere.
		return
	}
	if err != nil && errors.Is(cause, errIdentityLost) {
		// Cut short because the process lost the batch's identity: the
		// batch was released and the job runs again elsewhere.
		return
	}
	if err != nil && run.completedTx.Load() && p.completedInTx(&it.job) {
		// The handler completed the job in its own transaction, which
		// committed, and then returned an error: the job is completed and
		// runs no more. The error is the handler's, reported as such, not
		// as a failed attempt.
		p.cfg.Logger.Warn("millrace: job completed in its own transaction; its worker then returned an error, which changes nothing",
			"job", it.job.ID, "kind", it.job.Kind, "queue", it.job.Queue, "attempt", it.job.Attempt+1, "err", firstLine(err.Error()))
		err = nil
	}
	a := p.outcome(&it, err, cause, pol)
	a.Started, a.Finished = run.Started, p.cfg.Now()
	if run.completedTx.Load() {
		// The handler's transaction may have committed the completion (then
		// the flush skips this ack), or rolled back (then this outcome
		// stands: completed if the handler returned nil, else as decided).
		a.IfAbsent = true
	}
	p.ack(it.batch, a)
}

// completedInTx says the handler's own transaction committed the job's
// completion (CompleteTx): the job is completed in the database. When
// that cannot be read, the attempt's outcome stands as decided (its ack
// is written only if the transaction did not complete the job).
func (p *Pool) completedInTx(j *storage.Job) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.jobCtx), 5*time.Second)
	defer cancel()
	st, err := p.cfg.Store.JobState(ctx, j.ID)
	return err == nil && st == "completed"
}

// panicError is a panic recovered from a worker.
type panicError struct{ msg string }

func (e *panicError) Error() string { return e.msg }

func (p *Pool) call(ctx context.Context, run *Run) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{msg: fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()
	return p.cfg.Handle(ctx, run)
}

// errAbandoned is the error of an attempt whose handler ignored its
// context past its timeout and the grace after it.
var errAbandoned = errors.New("millrace: job ignored its context past its timeout and was abandoned (it may still be running)")

// callWithin runs the handler, but returns errAbandoned if it has not
// returned after limit: the job is then treated as a failed attempt (run
// again elsewhere, at least once) and its worker slot is freed; the
// handler's goroutine is left to finish on its own.
func (p *Pool) callWithin(ctx context.Context, run *Run, limit time.Duration) error {
	res := make(chan error, 1)
	go func() { res <- p.call(ctx, run) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-res:
		return err
	case <-t.C:
		n := p.abandoned.Add(1)
		p.cfg.Logger.Error("millrace: job ignored its context past its timeout; abandoned", "job", run.Job.ID,
			"kind", run.Job.Kind, "abandoned_in_process", n)
		return errAbandoned
	}
}

// markStarted records, through the marker, that job it is about to
// start; it reports whether the job may start.
func (p *Pool) markStarted(it *item) bool {
	req := startReq{it: it, ok: make(chan bool, 1)}
	select {
	case p.starts <- req:
	case <-p.claimCtx.Done():
		return false
	}
	select {
	case ok := <-req.ok:
		return ok
	case <-p.claimCtx.Done():
		return false // stopping: no job starts after Stop
	}
}

// marker writes the start marks of the jobs about to start, all those
// waiting in one statement, and tells each worker whether its job may
// start: a job whose batch was released meanwhile (fenced) does not.
func (p *Pool) marker() {
	for {
		var first startReq
		select {
		case first = <-p.starts:
		case <-p.claimCtx.Done():
			// Stopping: no job starts after Stop; answer whoever waits.
			for {
				select {
				case r := <-p.starts:
					r.ok <- false
				default:
					return
				}
			}
		}
		// One round in flight at a time; the jobs that ask meanwhile
		// share the next. Under a running limit a slot frees, starts its
		// next job from the buffer and frees again within a round trip:
		// with four rounds in flight nearly every start had a round, and a
		// commit, of its own (the mix at --rate max with running=40: 194
		// rounds per 1,000 jobs, against 76 with one).
		p.markSlots <- struct{}{}
		reqs := []startReq{first}
	drain:
		for {
			select {
			case r := <-p.starts:
				reqs = append(reqs, r)
			default:
				break drain
			}
		}
		go func() {
			defer func() { <-p.markSlots }()
			p.mark(reqs)
		}()
	}
}

// mark writes one round of start marks and answers each request.
func (p *Pool) mark(reqs []startReq) {
	owner := p.Owner()
	starts := make([]storage.Start, 0, len(reqs))
	for _, r := range reqs {
		if r.it.batch.owner != owner {
			r.ok <- false // leased under a lost identity
			continue
		}
		starts = append(starts, storage.Start{Batch: r.it.batch.Batch, Job: &r.it.job})
	}
	if len(starts) == 0 {
		return
	}
	answer := func(fenced []int64, ok bool) {
		for _, r := range reqs {
			if r.it.batch.owner == owner {
				r.ok <- ok && !slices.Contains(fenced, r.it.batch.TickID)
			}
		}
	}
	backoff := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(p.claimCtx, 10*time.Second)
		fenced, err := p.cfg.Store.MarkStarted(ctx, owner, starts)
		cancel()
		if err == nil {
			for _, t := range fenced {
				p.cfg.Logger.Warn("millrace: batch was released to another process; its jobs do not start here", "tick", t)
				if p.cfg.OnFenced != nil {
					p.cfg.OnFenced(t)
				}
			}
			answer(fenced, true)
			return
		}
		if p.claimCtx.Err() != nil {
			answer(nil, false)
			return
		}
		if !storage.Retryable(err) {
			// The server refused the marks: run the jobs unmarked (a crash
			// of this process while they run would not count an attempt)
			// rather than hold them until StuckAfter.
			p.cfg.Logger.Error("millrace: recording job starts failed; starting them unrecorded", "jobs", len(starts), "err", err)
			answer(nil, true)
			return
		}
		p.cfg.Logger.Warn("millrace: recording job starts failed; retrying", "jobs", len(starts), "err", err)
		select {
		case <-p.claimCtx.Done():
			answer(nil, false)
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}
