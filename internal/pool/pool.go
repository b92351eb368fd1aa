// Package pool runs a process's workers: per queue, one claimer that takes
// whole batches and a fixed number of workers that run their jobs; one
// marker that records, before their handlers run, the jobs about to start
// (in bulk: the workers starting at the same time share a round trip); one
// acker that appends every job's outcome in bulk a few milliseconds after
// it is known and closes each batch when its last job is acked.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Handler runs one job. A nil error completes it; an error fails the
// attempt (retried with backoff until max attempts, then discarded), unless
// it is a *Snooze, *Cancel or *Discard.
type Handler func(ctx context.Context, run *Run) error

// Run is one attempt of a job as its handler sees it.
type Run struct {
	Job     *storage.Job
	Batch   *storage.Batch
	Owner   int32     // the process identity that holds the batch
	Started time.Time // when the attempt began
	// completedTx is set once the handler completed the job inside its own
	// transaction (the ack may already exist).
	completedTx atomic.Bool
}

// MarkCompletedTx records that the handler wrote the job's completion in
// its own transaction: the pool then writes the ack only if that
// transaction did not commit it.
func (r *Run) MarkCompletedTx() { r.completedTx.Store(true) }

// Snooze, returned by a handler, runs the job again after Delay without
// counting the attempt.
type Snooze struct{ Delay time.Duration }

func (e *Snooze) Error() string { return fmt.Sprintf("millrace: job snoozed for %s", e.Delay) }

// Cancel, returned by a handler, finishes the job as cancelled: it never
// runs again. Err says why (may be nil).
type Cancel struct{ Err error }

func (e *Cancel) Error() string {
	if e.Err == nil {
		return "millrace: job cancelled"
	}
	return "millrace: job cancelled: " + e.Err.Error()
}

func (e *Cancel) Unwrap() error { return e.Err }

// Discard, returned by a handler, finishes the job as discarded at once,
// whatever attempts it has left. Err says why (may be nil).
type Discard struct{ Err error }

func (e *Discard) Error() string {
	if e.Err == nil {
		return "millrace: job discarded"
	}
	return "millrace: job discarded: " + e.Err.Error()
}

func (e *Discard) Unwrap() error { return e.Err }

// errCancelRequested is the cause of a running job's context cancelled by
// millrace.cancel.
var errCancelRequested = errors.New("millrace: job cancelled by request")

// ErrCancelRequested is the context cause a job sees when it was cancelled
// from outside (context.Cause(ctx)).
var ErrCancelRequested = errCancelRequested

// errTimeout is the cause of a job's context ended by its timeout.
var errTimeout = errors.New("millrace: job timed out")

// ErrTimeout is the context cause a job sees when its timeout passed.
var ErrTimeout = errTimeout

// KindPolicy is how jobs of one kind retry and how long they may run.
type KindPolicy struct {
	Backoff func(attempt int) time.Duration // nil: the pool's
	Timeout time.Duration                   // 0: none (a job's own timeout still applies)
}

// Config configures a Pool.
type Config struct {
	Store   *storage.Store
	Queues  map[string]int // queue name → number of workers
	Handle  Handler
	Logger  *slog.Logger
	Backoff func(attempt int) time.Duration // delay before attempt+1
	// Poll is the fallback claim interval of an idle queue when no
	// notification arrives (notifications are the normal wake-up).
	Poll time.Duration
	// FlushDelay is how long the acker waits after the first pending ack
	// for more before it writes them all in one transaction (default 5ms:
	// at a few hundred jobs per second or more, one flush carries several
	// acks, and one synchronous commit makes them all durable).
	FlushDelay time.Duration
	// OnClaim observes each claim that returned jobs.
	OnClaim func(queue string, d time.Duration, n int)
	// OnFenced is told when a flush found a batch re-leased elsewhere.
	OnFenced func(tick int64)
	// MaxBatchJobs caps the jobs of one claim (default 1000; a claim never
	// takes more than the queue's workers).
	MaxBatchJobs int
	// MaxBatchBytes caps the bytes of args of one claim (default 8 MiB;
	// a claim takes at least one job).
	MaxBatchBytes int64
	// OnFailure is told about every failed attempt: the job, its error,
	// whether it was a recovered panic, and whether it was the last
	// attempt (the job is discarded) or when it runs again.
	OnFailure func(job *storage.Job, err error, panicked, discarded bool, retryAt time.Time)
	// Policy gives a kind's retry and timeout policy (nil: defaults).
	Policy func(kind string) KindPolicy
	// OnAcked is told, after each flush commits, the acks it wrote (those
	// of fenced batches left out).
	OnAcked func(acks []storage.Ack)
	// Starve is how long a lower priority's first job may wait before its
	// lane is served first (default 5s).
	Starve time.Duration
	// CancelPoll is how often the ids of running jobs are checked for a
	// cancellation request whose notification was missed (default 1s).
	CancelPoll time.Duration
	// TimeoutGrace is how long a job may run on after its timeout, its
	// context cancelled, before it is abandoned (default 2s).
	TimeoutGrace time.Duration
	// Fresh says the process is surely alive (its lease was renewed
	// recently): claims wait while it says no (nil: always).
	Fresh func() bool
}

// item is one job of a leased batch.
type item struct {
	batch *batch
	job   storage.Job
	// started: the claim recorded this job's start (it went to an idle
	// worker at once), so it needs no start mark of its own.
	started bool
}

// running is a job being worked in this process.
type running struct {
	cancel context.CancelCauseFunc
	owner  int32 // the identity whose batch it belongs to
}

// startReq asks the marker to record that a job starts; ok says whether
// it may (false: its batch was released meanwhile, or the pool stops).
type startReq struct {
	it *item
	ok chan bool
}

// batch tracks a leased batch until every job has an ack.
type batch struct {
	*storage.Batch
	remaining atomic.Int32
	owner     int32 // the process identity that holds the lease
}

type queue struct {
	name    string
	workers int
	jobs    chan item
	wake    chan struct{}
	taken   chan struct{} // a worker took a job from jobs
	idle    atomic.Int32  // workers waiting for a job
}

// Pool is a running set of claimers, workers and the acker.
type Pool struct {
	cfg    Config
	owner  atomic.Int32
	queues map[string]*queue

	acks      chan storage.Ack
	starts    chan startReq
	markSlots chan struct{} // start-mark rounds in flight

	claimCtx    context.Context
	stopClaims  context.CancelFunc
	jobCtx      context.Context
	cancelJobs  context.CancelFunc
	stopping    atomic.Bool
	claimersWG  sync.WaitGroup
	workersWG   sync.WaitGroup
	ackerDone   chan struct{}
	identityGen atomic.Int64
	flushSeq    atomic.Int64
	ackStop     chan struct{} // closed by Stop: the acker writes what it has and exits

	runMu     sync.Mutex
	running   map[int64]*running
	abandoned atomic.Int64

	failMu         sync.Mutex
	failWindow     time.Time
	failLogged     int
	failSuppressed int
}

// New makes a pool; Start runs it.
func New(cfg Config) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.FlushDelay <= 0 {
		cfg.FlushDelay = 5 * time.Millisecond
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBatchJobs <= 0 {
		cfg.MaxBatchJobs = 1000
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	if cfg.CancelPoll <= 0 {
		cfg.CancelPoll = time.Second
	}
	if cfg.TimeoutGrace <= 0 {
		cfg.TimeoutGrace = 2 * time.Second
	}
	p := &Pool{cfg: cfg, queues: map[string]*queue{}, running: map[int64]*running{}, acks: make(chan storage.Ack, 4096),
		starts: make(chan startReq, 256), markSlots: make(chan struct{}, 4), ackerDone: make(chan struct{}), ackStop: make(chan struct{})}
	for name, n := range cfg.Queues {
		p.queues[name] = &queue{name: name, workers: n, jobs: make(chan item, n), wake: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	}
	return p
}

// DefaultBackoff waits 2^attempt seconds (capped at an hour) with ±20% jitter.
func DefaultBackoff(attempt int) time.Duration {
	d := time.Second << min(attempt, 12)
	if d > time.Hour {
		d = time.Hour
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// SetOwner sets the process identity under which batches are claimed. After
// a lost identity (its lease ran out) the client registers a new one (0
// meanwhile: no claim is made and no job starts); jobs of batches leased
// under the old one that have not started are dropped here, since their
// batches are released.
func (p *Pool) SetOwner(id int32) {
	p.owner.Store(id)
	p.identityGen.Add(1)
}

// Owner is the current process identity.
func (p *Pool) Owner() int32 { return p.owner.Load() }

// Start launches the claimers, workers and acker.
func (p *Pool) Start() {
	p.claimCtx, p.stopClaims = context.WithCancel(context.Background())
	p.jobCtx, p.cancelJobs = context.WithCancel(context.Background())
	for _, q := range p.queues {
		p.claimersWG.Add(1)
		go p.claim(q)
		for i := 0; i < q.workers; i++ {
			p.workersWG.Add(1)
			go p.work(q)
		}
	}
	go p.acker()
	go p.marker()
	go p.pollCancels()
}

// Abandon stops the jobs running under identity owner, which the process
// lost (its lease ran out, and its batches were released): their contexts
// are cancelled (cause ErrIdentityLost) and an attempt cut short this way
// writes no outcome; the jobs run again elsewhere. It returns how many
// jobs it stopped.
func (p *Pool) Abandon(owner int32) int {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	n := 0
	for _, r := range p.running {
		if r.owner == owner {
			r.cancel(errIdentityLost)
			n++
		}
	}
	return n
}

// errIdentityLost is the cause of a job's context cancelled because its
// process lost the identity that held its batch.
var errIdentityLost = errors.New("millrace: this process lost its identity (its lease ran out); the job's batch went to others")

// ErrIdentityLost is the context cause a job sees when its process's lease
// ran out while it ran (the process was stopped or cut off for too long)
// and its batch went to other processes.
var ErrIdentityLost = errIdentityLost

// CancelJob cancels the context of job id if it runs in this process (a
// cancellation request reached it); it reports whether it did.
func (p *Pool) CancelJob(id int64) bool {
	p.runMu.Lock()
	r := p.running[id]
	p.runMu.Unlock()
	if r == nil {
		return false
	}
	r.cancel(errCancelRequested)
	return true
}

// pollCancels checks, every CancelPoll while jobs run, whether any of them
// has a cancellation request: a notification can be missed (a reconnect).
func (p *Pool) pollCancels() {
	t := time.NewTicker(p.cfg.CancelPoll)
	defer t.Stop()
	for {
		select {
		case <-p.claimCtx.Done():
			return
		case <-t.C:
		}
		p.runMu.Lock()
		ids := make([]int64, 0, len(p.running))
		for id := range p.running {
			ids = append(ids, id)
		}
		p.runMu.Unlock()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(p.claimCtx, 5*time.Second)
		got, err := p.cfg.Store.Cancelled(ctx, ids)
		cancel()
		if err != nil {
			continue
		}
		for _, id := range got {
			p.CancelJob(id)
		}
	}
}

// Wake tells a queue's claimer that new jobs may have committed.
func (p *Pool) Wake(queueName string) {
	if q, ok := p.queues[queueName]; ok {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// WakeAll wakes every claimer (after a reconnect, notifications may have
// been missed).
func (p *Pool) WakeAll() {
	for name := range p.queues {
		p.Wake(name)
	}
}

func (p *Pool) claim(q *queue) {
	defer p.claimersWG.Done()
	ctx := p.claimCtx
	backoff := 10 * time.Millisecond
	lim := storage.Limits{MaxJobs: min(p.cfg.MaxBatchJobs, q.workers), MaxBytes: p.cfg.MaxBatchBytes, Starve: p.cfg.Starve}
	// req numbers this claimer's calls. After an error the same req is
	// sent again with retry set: if the failed call committed and only its
	// reply was lost, its batch comes back instead of being stranded.
	var req int64
	retry := false
	retryOwner := int32(0)
	for ctx.Err() == nil {
		// Claim only when the workers have room: the buffer holds at most
		// one job per worker, and a new batch is taken once it has drained.
		if len(q.jobs) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-q.taken:
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		owner := p.Owner()
		if owner == 0 || (p.cfg.Fresh != nil && !p.cfg.Fresh()) {
			// No identity, or one that may be dead (the process was stopped
			// or cut off): wait for a heartbeat to say.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if retry && owner != retryOwner {
			retry = false // the old identity's batches are released by the leader
		}
		if !retry {
			req++
		}
		start := time.Now()
		// The workers idle now start the first jobs of the claim at once
		// (nothing else feeds them): the claim records their starts.
		lim.Start = int(q.idle.Load())
		sbs, err := p.cfg.Store.Claim(ctx, q.name, owner, req, retry, lim)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			retry, retryOwner = true, owner
			p.cfg.Logger.Warn("millrace: claim failed; retrying", "queue", q.name, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		retry = false
		if len(sbs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
			case <-time.After(p.cfg.Poll):
			}
			continue
		}
		n := 0
		for _, sb := range sbs {
			n += len(sb.Jobs)
		}
		if p.cfg.OnClaim != nil {
			p.cfg.OnClaim(q.name, time.Since(start), n)
		}
		// Batches come in lane order (priority, the starving first); run
		// each batch's jobs in commit order.
		marked := lim.Start
		for _, sb := range sbs {
			b := &batch{Batch: sb, owner: owner}
			b.remaining.Store(int32(len(sb.Jobs)))
			for _, j := range sb.Jobs {
				if j.Cancelled {
					// Cancelled before it ran: ack it so, never run it.
					p.ack(b, storage.Ack{Batch: sb, Job: &j, State: storage.AckCancelled, Finished: time.Now()})
					continue
				}
				it := item{batch: b, job: j, started: marked > 0}
				marked--
				select {
				case q.jobs <- it:
				case <-ctx.Done():
					return // the rest stay unacked: released with the lease
				}
			}
		}
	}
}

func (p *Pool) work(q *queue) {
	defer p.workersWG.Done()
	for {
		var it item
		q.idle.Add(1)
		select {
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
		for p.cfg.Fresh != nil && !p.cfg.Fresh() && p.claimCtx.Err() == nil {
			// The process may be dead in the others' eyes (it was stopped
			// or cut off for half its lease or more): the next heartbeat
			// says whether the batch is still its own.
			time.Sleep(20 * time.Millisecond)
		}
		if it.batch.owner != p.Owner() {
			continue // leased under a lost identity: released to other claimers
		}
		if !it.started && !p.markStarted(&it) {
			continue // its batch was released meanwhile: it runs elsewhere
		}
		p.run(it)
	}
}

func (p *Pool) run(it item) {
	run := &Run{Job: &it.job, Batch: it.batch.Batch, Owner: it.batch.owner, Started: time.Now()}
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
	a.Started, a.Finished = run.Started, time.Now()
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := p.cfg.Store.JobState(ctx, j.ID)
	return err == nil && st == "completed"
}

// firstLine is s up to its first newline (a panic's stack stays in the
// stored error).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// outcome decides what one attempt of a job leads to, in one place: the
// attempt is this run's number (1 for the first). nil completes the job;
// a *Snooze runs it again later without counting the attempt; a *Cancel,
// or any error after a cancellation request, cancels it; a *Discard
// discards it; any other error retries it after its kind's backoff, or
// discards it after its last attempt.
func (p *Pool) outcome(it *item, err error, cause error, pol KindPolicy) storage.Ack {
	a := storage.Ack{Batch: it.batch.Batch, Job: &it.job, State: storage.AckCompleted}
	if err == nil {
		return a
	}
	var (
		sn *Snooze
		cn *Cancel
		dc *Discard
	)
	switch {
	case errors.As(err, &sn):
		a.State = storage.AckSnoozed
		a.RetryAt = time.Now().Add(max(sn.Delay, 0))
		return a
	case errors.As(err, &cn):
		a.State = storage.AckCancelled
		a.Err = "cancelled by its worker"
		if cn.Err != nil {
			a.Err = cn.Err.Error()
		}
		return a
	case errors.Is(cause, errCancelRequested):
		a.State = storage.AckCancelled
		a.Err = err.Error()
		return a
	}
	attempt := it.job.Attempt + 1
	a.Err = err.Error()
	if errors.Is(cause, errTimeout) && !errors.Is(err, errTimeout) {
		a.Err = "millrace: job timed out: " + a.Err
	}
	backoff := p.cfg.Backoff
	if pol.Backoff != nil {
		backoff = pol.Backoff
	}
	if errors.As(err, &dc) || attempt >= it.job.MaxAttempts {
		a.State = storage.AckDiscarded
		if dc != nil {
			// The worker's own reason, as for JobCancel.
			a.Err = "discarded by its worker"
			if dc.Err != nil {
				a.Err = dc.Err.Error()
			}
		}
	} else {
		a.State = storage.AckRetried
		a.RetryAt = time.Now().Add(backoff(attempt))
	}
	var pe *panicError
	panicked := errors.As(err, &pe)
	discarded := a.State == storage.AckDiscarded
	p.logFailure(&it.job, err, panicked, discarded, a.RetryAt)
	if p.cfg.OnFailure != nil {
		p.cfg.OnFailure(&it.job, err, panicked, discarded, a.RetryAt)
	}
	return a
}

// failLogLimit is the most failed attempts logged per second; the rest are
// counted and reported in the next second's first line.
const failLogLimit = 10

// logFailure logs a failed attempt, rate-limited.
func (p *Pool) logFailure(j *storage.Job, err error, panicked, discarded bool, retryAt time.Time) {
	p.failMu.Lock()
	now := time.Now()
	if now.Sub(p.failWindow) >= time.Second {
		if p.failSuppressed > 0 {
			p.cfg.Logger.Warn("millrace: more failed attempts were not logged", "count", p.failSuppressed)
		}
		p.failWindow, p.failLogged, p.failSuppressed = now, 0, 0
	}
	if p.failLogged >= failLogLimit {
		p.failSuppressed++
		p.failMu.Unlock()
		return
	}
	p.failLogged++
	p.failMu.Unlock()
	msg := firstLine(err.Error())
	attrs := []any{"job", j.ID, "kind", j.Kind, "queue", j.Queue, "attempt", j.Attempt + 1, "max_attempts", j.MaxAttempts,
		"panic", panicked, "err", msg}
	if discarded {
		p.cfg.Logger.Error("millrace: job failed its last attempt and was discarded", attrs...)
	} else {
		p.cfg.Logger.Warn("millrace: job failed; retrying", append(attrs, "retry_in", time.Until(retryAt).Round(time.Millisecond))...)
	}
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

// doneMark is an ack-channel entry that closes a batch.
const doneMark int16 = -1

func (p *Pool) ack(b *batch, a storage.Ack) {
	p.send(a)
	if b.remaining.Add(-1) == 0 {
		p.send(storage.Ack{Batch: b.Batch, State: doneMark})
	}
}

// send queues an ack for the acker; once the acker has exited (a job
// outlived Stop's deadline) the ack is dropped: its batch is released and
// the job runs again elsewhere.
func (p *Pool) send(a storage.Ack) {
	select {
	case p.acks <- a:
	case <-p.ackerDone:
	}
}

func (p *Pool) acker() {
	defer close(p.ackerDone)
	for {
		var first storage.Ack
		select {
		case first = <-p.acks:
		case <-p.ackStop:
			// Write what is queued, then exit.
			var rest []storage.Ack
			for {
				select {
				case a := <-p.acks:
					rest = append(rest, a)
					continue
				default:
				}
				break
			}
			if len(rest) > 0 {
				p.flush(rest)
			}
			return
		}
		pending := []storage.Ack{first}
		timer := time.NewTimer(p.cfg.FlushDelay)
	gather:
		for {
			select {
			case a := <-p.acks:
				pending = append(pending, a)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		// Drain whatever else is already queued.
	drain:
		for {
			select {
			case a := <-p.acks:
				pending = append(pending, a)
			default:
				break drain
			}
		}
		p.flush(pending)
	}
}

func (p *Pool) flush(pending []storage.Ack) {
	var acks []storage.Ack
	var done []*storage.Batch
	for _, a := range pending {
		if a.State == doneMark {
			done = append(done, a.Batch)
		} else {
			acks = append(acks, a)
		}
	}
	p.flushParts(acks, done)
}

// flushParts writes acks, then done, and never drops them. A flush the
// server rejects (as opposed to a lost connection) is split in halves
// until the ack it rejects is alone; that ack is then written with a
// placeholder error text. Batches are closed with the last part.
func (p *Pool) flushParts(acks []storage.Ack, done []*storage.Batch) {
	err := p.flushOnce(acks, done)
	if err == nil {
		return
	}
	if len(acks) > 1 {
		half := len(acks) / 2
		p.flushParts(acks[:half], nil)
		p.flushParts(acks[half:], done)
		return
	}
	if len(acks) == 1 && acks[0].Err != unstorable {
		p.cfg.Logger.Error("millrace: the server rejected an ack; storing it with a placeholder error", "job", acks[0].Job.ID, "err", err)
		a := acks[0]
		a.Err = unstorable
		p.flushParts([]storage.Ack{a}, done)
		return
	}
	// Nothing left to simplify: keep trying, slowly, and say so.
	for attempt := 0; ; attempt++ {
		p.cfg.Logger.Error("millrace: the server keeps rejecting an ack flush; retrying", "acks", len(acks), "done", len(done), "err", err)
		time.Sleep(min(time.Second<<min(attempt, 5), 30*time.Second))
		if err = p.flushOnce(acks, done); err == nil {
			return
		}
	}
}

// unstorable replaces an error text the server would not store.
const unstorable = "millrace: the job's error text could not be stored"

// flushOnce writes one flush under one sequence number, retrying while the
// connection or server is away, or the server rolled it back for a reason
// of its own (a serialization failure, a deadlock, a timeout: see
// storage.Retryable); a replay of a flush that did commit is a no-op. It
// returns the error of a flush the server rejected.
func (p *Pool) flushOnce(acks []storage.Ack, done []*storage.Batch) error {
	owner := p.Owner()
	for owner == 0 {
		time.Sleep(20 * time.Millisecond) // registering a new identity
		owner = p.Owner()
	}
	seq := p.flushSeq.Add(1)
	backoff := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		fenced, err := p.cfg.Store.Flush(ctx, owner, seq, attempt > 0, acks, done)
		cancel()
		if err == nil {
			if p.cfg.OnAcked != nil && len(acks) > 0 {
				p.cfg.OnAcked(unfenced(acks, fenced))
			}
			for _, t := range fenced {
				p.cfg.Logger.Warn("millrace: batch was released to another process; its acks from here were dropped", "tick", t)
				if p.cfg.OnFenced != nil {
					p.cfg.OnFenced(t)
				}
			}
			return nil
		}
		if !storage.Retryable(err) {
			return err
		}
		p.cfg.Logger.Warn("millrace: ack flush failed; retrying", "acks", len(acks), "err", err, "attempt", attempt)
		time.Sleep(backoff)
		backoff = min(backoff*2, time.Second)
	}
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

// unfenced is acks without those of the fenced batches.
func unfenced(acks []storage.Ack, fenced []int64) []storage.Ack {
	if len(fenced) == 0 {
		return acks
	}
	out := make([]storage.Ack, 0, len(acks))
	for _, a := range acks {
		if !slices.Contains(fenced, a.Batch.TickID) {
			out = append(out, a)
		}
	}
	return out
}

// Stop stops claiming and starting jobs at once and lets running jobs
// finish. When ctx has a deadline, the jobs' contexts are cancelled a
// little before it (see stopGrace), so that jobs that honour their context
// return in time; without one, when ctx ends. Stop returns by ctx's
// deadline whatever the jobs do, and nil if every job returned by then.
// The outcomes known by then are written, and the batches this process
// still holds (jobs claimed but not started, or cut short) are released to
// any claimer of their queue.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopping.Store(true)
	p.stopClaims()
	p.claimersWG.Wait()
	finished := make(chan struct{})
	go func() { p.workersWG.Wait(); close(finished) }()
	var cancelAt <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline) - p.stopGrace(time.Until(deadline)))
		defer t.Stop()
		cancelAt = t.C
	}
	var err error
	select {
	case <-finished:
	case <-cancelAt:
		p.cancelJobs()
		select {
		case <-finished:
		case <-ctx.Done():
			err = fmt.Errorf("millrace: stop deadline passed with jobs still running after their context was cancelled; %w", ctx.Err())
		}
	case <-ctx.Done():
		err = fmt.Errorf("millrace: stop deadline passed with jobs still running; %w", ctx.Err())
	}
	p.cancelJobs()
	close(p.ackStop)
	select {
	case <-p.ackerDone:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("millrace: stop deadline passed while writing job outcomes; %w", ctx.Err())
		}
		return err // the leader releases what this process held once its session ends
	}
	if owner := p.Owner(); owner != 0 {
		if _, rerr := p.cfg.Store.Release(ctx, owner); rerr != nil && err == nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("millrace: releasing unfinished batches at stop failed; the leader releases them", "err", rerr)
		}
	}
	return err
}

// stopGrace is the part of the time left to Stop that running jobs get
// after their context is cancelled, to return and have what they did
// written: a fifth of it, at most TimeoutGrace (2s by default).
func (p *Pool) stopGrace(left time.Duration) time.Duration {
	return max(min(left/5, p.cfg.TimeoutGrace), 0)
}

// StopAndCancel cancels the context of every running job at once, then
// stops as Stop does. Jobs cut short this way are not counted as attempts.
func (p *Pool) StopAndCancel(ctx context.Context) error {
	p.stopping.Store(true)
	p.cancelJobs()
	return p.Stop(ctx)
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
		// A few rounds in flight at once; the jobs that ask meanwhile
		// share the next.
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
