// Package pool runs a process's workers: per queue, one claimer that takes
// whole batches and a fixed number of workers that run their jobs; one
// marker that records, before their handlers run, the jobs about to start
// (in bulk: the workers starting at the same time share a round trip); one
// acker that appends every job's outcome in bulk a few milliseconds after
// it is known and closes each batch when its last job is acked.
//
// Its files, one per role:
//   - pool.go: the configuration and the types the roles share;
//   - claimer.go: the claim loop of each queue, its waking (Wake, WakeAll),
//     and the start marks a claim records for the workers idle at the time;
//   - executor.go: a worker running one job: its start mark (the marker),
//     its timeout, a recovered panic;
//   - outcome.go: what an attempt's result becomes (completed, retried,
//     snoozed, cancelled or discarded), and the failure log;
//   - acker.go: the acks, written in bulk, fenced, split when rejected;
//   - cancel.go: cancellation requests reaching running jobs;
//   - lifecycle.go: New, Start, Stop, and the process identity.
package pool

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testsignal"
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
	// MaxPoll caps Poll's backoff: each claim that finds nothing doubles
	// the wait before the next, from Poll up to MaxPoll; a wake-up or a
	// claim that finds jobs starts it again at Poll. Zero or less than
	// Poll: no backoff.
	MaxPoll time.Duration
	// ProbeFrom is the fallback wait from which an idle queue stops
	// claiming on its own: when its wait of at least ProbeFrom ends, it
	// asks the prober, which asks the database once for every queue
	// waiting so (millrace.queues_with_work), and claims only if its queue
	// may have work (default 1s).
	ProbeFrom time.Duration
	// FlushDelay is how long the acker waits after the first pending ack
	// for more before it writes them all in one transaction (default
	// DefaultFlushDelay): one flush carries the acks of that time, and one
	// synchronous commit makes them all durable. A flush costs the server
	// mostly a fixed price, whatever it carries. It waits less for an ack
	// that frees a slot of a full key (KeyFlushDelay) and for a retry or snooze
	// due sooner (then until its due time).
	FlushDelay time.Duration
	// KeyFlushDelay bounds the acker's wait once it holds the end of a job
	// of a per-key limit whose claim left all its key's slots held
	// (storage.Job.KeyFull): other processes see its key's slot free only
	// once it is flushed (default 5ms). The end of a job whose key had
	// room waits FlushDelay.
	KeyFlushDelay time.Duration
	// Yield is the longest a claimer that keeps losing announcements waits
	// before it answers one (default DefaultYield; negative: never waits).
	// Every announcement of another process (WakeRemote) reaches every
	// process working the queue, and the first claim takes its jobs; a
	// claim that finds the queue's newest batch taken by another process
	// doubles the claimer's wait (from 1 ms up to Yield), and a claim that
	// returns jobs ends it. Its own inserts (Wake) never wait.
	Yield time.Duration
	// Gather is how long after a claim of a limited queue that took every
	// job the queue had, or found the batch it was woken for taken by
	// another process (no limit bound it), its claimer waits before it
	// claims again (default DefaultGather; negative: it claims at once).
	// The jobs announced meanwhile share one claim: a limit's bookkeeping
	// (the process's slots and key map, read and written by each claim)
	// is paid per claim, not per job. A job of an idle queue (no such
	// claim within Gather) is claimed at once, and a queue without limits
	// never waits.
	Gather time.Duration
	// OnClaim observes each claim that returned jobs.
	OnClaim func(queue string, d time.Duration, n int)
	// OnDeferred is called after a claim whose per-key limit deferred
	// jobs to the schedule, due soon: the promoter may be asleep.
	OnDeferred func()
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
	// of fenced batches left out), and the shift the server read their
	// times with (storage.Store.FlushShift): a RetryAt plus shift is the
	// server's due time.
	OnAcked func(acks []storage.Ack, shift time.Duration)
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
	// Now is the clock the times of an attempt (started, finished, a
	// retry's due time) are read from (default time.Now). The server reads
	// them relative to the flush that carries them (millrace.flush), so a
	// skewed host changes no outcome; tests set a skewed one.
	Now func() time.Time
}

// item is one job of a leased batch.
type item struct {
	batch *batch
	job   storage.Job
	// started: the claim recorded this job's start and it went to a
	// waiting worker at once (queue.start), so it needs no start mark of
	// its own.
	started bool
	// admitted: its claimer counted it in as running under its key's
	// slots (keyGate.admit), so its worker starts it without asking the
	// key gate.
	admitted bool
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
	maxJobs int           // the most jobs a claim takes: one per worker, at most MaxBatchJobs
	jobs    chan item     // claimed jobs waiting for a worker, one per worker at most
	start   chan item     // unbuffered: a job whose start the claim recorded, to a worker waiting now
	wake    chan struct{} // a wake-up to answer at once: a local insert, a reconnect
	heard   chan struct{} // another process's announcement (WakeRemote)
	taken   chan struct{} // a worker took a job from jobs
	idle    atomic.Int32  // workers waiting for a job
	// held is what this process has in hand of the queue: jobs claimed
	// that have not yet ended here. A claim of a queue with a limit sends
	// it.
	held atomic.Int64
	// gate holds the jobs in hand beyond the process's slots of the
	// queue's running limit.
	gate *gate
	// bound says a limit bound the queue's last claim (it took all the
	// limit left): the claimer claims again once its jobs in hand fit
	// its slots (a rate limit: as soon as one ends). A claim the limit
	// did not bind waits as any other.
	bound atomic.Bool
	// rated says it found a rate limit: a claim takes no more jobs than
	// there are workers idle, so that each starts at its claim.
	rated atomic.Bool
	// keyed says its last claim that found jobs had jobs with keys (a
	// per-key limit or rate): its claims are not capped at the idle
	// workers, whose batches would take the lane past a key's backlog
	// more slowly.
	keyed atomic.Bool
	// short says its last rate-limited claim took as many jobs as it had
	// idle workers (or had none): more may wait for a worker.
	short atomic.Bool
	// keys is the process's slots of each key of the queue's per-key
	// limit, and the key's jobs that wait here for one.
	keys keyGate
	// pace is how long a job of a per-key limit holds its key's slot
	// here, from its start to the flush of its outcome: a moving mean in
	// nanoseconds (0: none yet). A claim paces the jobs the limit defers
	// by it.
	pace atomic.Int64
}

// ran adds a job's run time d to q's pace.
func (q *queue) ran(d time.Duration) {
	old := q.pace.Load()
	if old == 0 {
		q.pace.Store(int64(d))
		return
	}
	q.pace.Store(old + (int64(d)-old)/8)
}

// Pool is a running set of claimers, workers and the acker.
type Pool struct {
	cfg    Config
	owner  atomic.Int32
	queues map[string]*queue

	acks      chan storage.Ack
	starts    chan startReq
	markSlots chan struct{} // start-mark rounds in flight

	// idleWait fires with the wait a claimer chose after a claim that
	// found nothing (tests only).
	idleWait testsignal.Signal[time.Duration]

	// peeked fires with the process a claimer's peek found holding the
	// queue's newest batch, when the peek took the place of a claim.
	peeked testsignal.Signal[int32]
	// yielded fires with each wait before a claim answers another
	// process's announcement (tests only).
	yielded testsignal.Signal[time.Duration]
	// gathered fires with each wait of a limited queue's claimer before
	// it claims again (Config.Gather; tests only).
	gathered testsignal.Signal[time.Duration]

	// probes carries the long-idle claimers' questions to the prober.
	probes chan probe
	// probed fires with the queues named in each prober's round (tests
	// only).
	probed testsignal.Signal[[]string]

	claimCtx   context.Context
	stopClaims context.CancelFunc
	jobCtx     context.Context
	cancelJobs context.CancelFunc
	// ackCtx bounds the acker's writes: Stop cancels it (abortAcks) once
	// its deadline passes, and the acker gives up what it has not written.
	ackCtx      context.Context
	abortAcks   context.CancelFunc
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
