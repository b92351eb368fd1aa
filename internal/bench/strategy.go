package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Job is the bench's unit of work. Every strategy stores the same job model:
// the bench's own sequence number (so lost and duplicated jobs can be
// counted) and a small JSON payload.
type Job struct {
	ID      int64
	Payload []byte
	// Process is the index, from 0, of the process (Env.Processes) whose
	// worker runs the job; strategies that run one process leave it 0.
	Process int

	// RunAt, when set, is when the job is due (a scheduled job of --mix);
	// UniqueKey, when not 0, makes the job unique by that key: an insert
	// with the key of a job not yet finished is a duplicate and stores
	// nothing. Only a Mixer's EnqueueMix sees them.
	RunAt     time.Time
	UniqueKey int64
	// Key, when not 0, is the job's key under --limit per-key=N: the
	// strategy stores it in the args field KeyArg.
	Key    int64
	KeyArg string
	// ReadyAt is when the strategy made the job ready to run (its run_at,
	// or when its retry or snooze fell due), as the worker received it;
	// zero when the strategy does not say.
	ReadyAt time.Time
}

// Handler is called by a strategy's workers once per claimed job, when the
// work starts. It performs the work (sleeps --work) and returns; the strategy
// then finishes the job its own way (DELETE, ack, ...).
type Handler func(ctx context.Context, job Job) error

// PoolerAware is a strategy that can run through a transaction pooler
// (--pooler): SetSessionURL, called before Setup, gives the direct URL
// for what must not go through the pooler (LISTEN, session state).
type PoolerAware interface {
	SetSessionURL(url string)
}

// Env is what the bench hands a strategy for one run.
type Env struct {
	// URL of the database the strategy works in.
	URL string
	// Workers is the number of concurrent workers (--workers), over all
	// processes.
	Workers int
	// Processes is the number of independent clients the workers are split
	// into (--processes): 1, or more for a strategy that implements
	// Multiprocess. Work sets Job.Process to the index of the process whose
	// worker runs a job.
	Processes int
	// Handle performs one job's work.
	Handle Handler
	// Limit is --limit, for a Limiter: the strategy sets it on its queue
	// before its workers claim.
	Limit Limit
	// ObserveClaim records the duration of the statement(s) that found and
	// locked a job or batch; n is the number of jobs it returned (claims
	// that return nothing are not recorded).
	ObserveClaim func(d time.Duration, n int)
	// RetryBackoff, when not 0, is the delay before a failed attempt runs
	// again (a Mixer's worker gets ErrMixFail from Handle).
	RetryBackoff time.Duration
	// ObservePickup records a job's pickup latency as the strategy's own
	// library measures it (River: the time from a job's scheduled_at to
	// its executor starting, from its event subscription). Strategies whose
	// library reports none leave it unused; the bench's own end-to-end
	// latency is recorded for every strategy regardless.
	ObservePickup func(d time.Duration)
	// RotateAfter, when not 0, is how long a slot of a ring stays current
	// (Config.RotateAfter); strategies without a ring ignore it.
	RotateAfter time.Duration
}

// Strategy is one way of storing, claiming and finishing jobs. A strategy
// keeps all its state in its own tables so that strategies can run one after
// another on the same cluster.
type Strategy interface {
	// Name is the strategy's --strategies name.
	Name() string
	// Setup creates the strategy's tables from scratch (dropping leftovers).
	Setup(ctx context.Context, url string) error
	// Tables lists the strategy's own tables, schema-qualified, whose dead
	// tuples and sizes the sampler reports.
	Tables() []string
	// Enqueue stores jobs as an application would: one autocommit statement
	// (or COPY) per call, committed when it returns. The producer calls it
	// with one job at a time when pacing, and with batches in --rate max and
	// burndown modes when MaxBatch allows.
	Enqueue(ctx context.Context, jobs []Job) error
	// MaxBatch is the largest batch Enqueue accepts (1 for strategies that
	// only enqueue one job per statement).
	MaxBatch() int
	// Work runs env.Workers workers until ctx is cancelled, then lets
	// in-flight jobs finish and returns.
	Work(ctx context.Context, env Env) error
	// Remaining returns the ids of jobs still stored and not finished, after
	// Work has returned; the bench uses it to tell lost jobs from backlog.
	Remaining(ctx context.Context) ([]int64, error)
	// Close releases connections. Tables are left for inspection and dropped
	// by the next Setup.
	Close() error
}

// Rotator is implemented by strategies that reclaim space by rotating
// segments. The sampler calls Rotations once a second, on its own schedule,
// to count the rotations of each second and phase.
type Rotator interface {
	// Rotations returns the cumulative number of segment rotations since
	// the strategy's schema was installed.
	Rotations(ctx context.Context) (int64, error)
}

// WorkerDefaulter is implemented by strategies whose own benchmark runs a
// different number of workers than DefaultWorkers: when --workers is not
// given (Config.Workers is 0), the strategy runs DefaultWorkers() of them.
// River's workers are goroutines fed by one fetch query whose LIMIT is the
// number of free worker slots, so its worker count is also its fetch batch.
type WorkerDefaulter interface {
	DefaultWorkers() int
}

// Multiprocess is implemented by strategies whose Work can run its workers
// as Env.Processes independent clients, as that many processes would (each
// with its own connections). A strategy that does not implement it is
// refused when --processes is more than 1.
type Multiprocess interface {
	// Multiprocess reports whether Work honours Env.Processes > 1.
	Multiprocess() bool
}

// Staller is implemented by strategies that can run the stall scenario: the
// bench enqueues jobs on queues that Work does not serve, enqueues a job in
// a transaction it holds open, and has queues served on demand.
type Staller interface {
	// EnqueueQueue stores jobs on the named queue, one autocommit
	// statement per job or per call.
	EnqueueQueue(ctx context.Context, queue string, jobs []Job) error
	// EnqueueTx stores job on the main queue (the one Work serves) inside
	// tx, a transaction the bench holds open on its own connection: the job
	// exists if and only if tx commits.
	EnqueueTx(ctx context.Context, tx pgx.Tx, job Job) error
	// Serve works the named queue with workers workers that call handle, as
	// a client of its own, until ctx is cancelled; then it lets running jobs
	// finish (their context is cancelled if they take too long), records
	// what they did, and returns. An error starting the client is returned
	// at once.
	Serve(ctx context.Context, queue string, workers int, handle Handler) error
}

// Watcher is a strategy that has a dashboard, which --watch-queues reads
// as an operator's open page would, to measure what looking costs.
type Watcher interface {
	// WatchQueues reads, on conn, what the strategy's dashboard shows on
	// its queues page at each refresh.
	WatchQueues(ctx context.Context, conn *pgx.Conn) error
}

// Chaoser is implemented by strategies that can run the chaos scenario:
// their workers run as operating-system processes the bench starts, kills
// and stops (each one client, as WorkProcess runs it), and the bench
// enqueues jobs that crash their process and a unique job in a
// transaction it holds open.
type Chaoser interface {
	// WorkProcess runs in a child process of the bench: one client of
	// env.Workers workers on the main queue (Job.Process = proc) until ctx
	// is cancelled, then it stops gracefully. leases sets the client's
	// process and leader leases (zero: the library's defaults); leading is
	// called whenever the client becomes or stops being the maintenance
	// leader.
	WorkProcess(ctx context.Context, env Env, proc int, leases Leases, leading func(bool)) error
	// EnqueueAttempts stores job on the main queue with at most
	// maxAttempts attempts, and returns the strategy's reference to it.
	EnqueueAttempts(ctx context.Context, job Job, maxAttempts int) (ref int64, err error)
	// EnqueueUniqueTx stores job on the main queue, unique by key, inside
	// tx (a transaction the bench holds open): it exists if tx commits.
	EnqueueUniqueTx(ctx context.Context, tx pgx.Tx, job Job, key string) error
	// FinalState is where the job EnqueueAttempts returned ref for stands:
	// "completed", "discarded", "cancelled", "running", ... ("" unknown).
	FinalState(ctx context.Context, ref int64) (string, error)
	// Retrying returns those of the bench's job ids that wait for a
	// retry due after now less grace (an attempt failed or was charged to
	// a process that died running it, and its backoff has not passed, or
	// passed less than grace ago): unfinished, yet not stranded.
	Retrying(ctx context.Context, ids []int64, grace time.Duration) (map[int64]bool, error)
}

// Explainer is a Chaoser that can say, for the chaos check's notes, where
// each of some unfinished jobs (bench ids) stands in its storage: so that a
// stranded job found once on a loaded machine explains itself.
type Explainer interface {
	Explain(ctx context.Context, ids []int64) (map[int64]string, error)
}

// Leases are a chaos child's process and leader leases (zero: the
// strategy's defaults).
type Leases struct {
	Process, Leader time.Duration
	// Lost, when set, is called when the child's client learns that its
	// identity ended (its lease ran out while it was stopped or cut off):
	// the jobs it was running, or had finished without their outcome
	// written, may run again elsewhere (a crash window).
	Lost func() `json:"-"`
}

// Instrumented is implemented by strategies whose client exports
// Prometheus metrics (--metrics-listen). The bench records what they
// counted next to its own counts, in summary.json.
type Instrumented interface {
	// Instrument registers the strategy's metrics with reg. The bench
	// calls it before Setup.
	Instrument(reg *prometheus.Registry) error
	// MetricTotals returns, once Work has returned, what the metrics
	// counted for the main stream (the queue Work serves) over the whole
	// run, by series: name{labels} summed over the other labels.
	MetricTotals() map[string]float64
}

// Mixer is implemented by strategies that can run --mix: scheduled,
// unique and cancelled jobs, and handlers that fail an attempt (ErrMixFail:
// retried after Env.RetryBackoff) or snooze (*SnoozeError: run again after
// its delay, the attempt not counted).
type Mixer interface {
	// EnqueueMix stores jobs as Enqueue does (one call, committed when it
	// returns, at most MaxBatch jobs), honouring each job's RunAt and
	// UniqueKey; no two jobs of one call share a UniqueKey. It returns one
	// MixResult per job, in the order of jobs. On an error none is known
	// to be stored or not.
	EnqueueMix(ctx context.Context, jobs []Job) ([]MixResult, error)
	// Cancel cancels the job EnqueueMix returned ref for, and reports
	// whether it was cancelled while it waited (it must then never run)
	// and the strategy's word for what it did.
	Cancel(ctx context.Context, ref int64) (cancelled bool, result string, err error)
}

// MixResult is what EnqueueMix did with one job.
type MixResult struct {
	// Ref is the strategy's reference to the job (for Cancel); for a
	// duplicate, the reference of the job that blocked it.
	Ref int64
	// Duplicate says the job was the duplicate of an unfinished unique
	// job with its UniqueKey: nothing was stored.
	Duplicate bool
}

// Historian is implemented by strategies that keep finished jobs for a
// retention (a history), so that the sampler reports that storage apart
// from the queue's: a queue's storage is bounded by the arrival rate times
// how long it keeps a job it has finished with, a history's by the arrival
// rate times its retention.
type Historian interface {
	// HistoryTables lists those of Tables that keep finished jobs.
	HistoryTables() []string
}

// Factory makes a fresh Strategy.
type Factory func() Strategy

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
)

// Register makes a strategy available to --strategies. It is called from
// init functions; a second registration under one name panics.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("bench: strategy registered twice: " + name)
	}
	registry[name] = f
}

// Lookup returns the factory for a strategy name, or an error listing the
// strategies there are.
func Lookup(name string) (Factory, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if f, ok := registry[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown strategy %q (have: %v)", name, namesLocked())
}

// stallers lists the registered strategies that can run the stall scenario.
func stallers() []string {
	var out []string
	for _, n := range Names() {
		f, _ := Lookup(n)
		if _, ok := f().(Staller); ok {
			out = append(out, n)
		}
	}
	return out
}

// chaosers lists the registered strategies that can run the chaos scenario.
func chaosers() []string {
	var out []string
	for _, n := range Names() {
		f, _ := Lookup(n)
		if _, ok := f().(Chaoser); ok {
			out = append(out, n)
		}
	}
	return out
}

// mixers lists the registered strategies that can run --mix.
func mixers() []string {
	var out []string
	for _, n := range Names() {
		f, _ := Lookup(n)
		if _, ok := f().(Mixer); ok {
			out = append(out, n)
		}
	}
	return out
}

// Names lists the registered strategies in order.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
