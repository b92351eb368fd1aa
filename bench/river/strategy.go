package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/bench/cli"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

func init() { bench.Register("river", func() bench.Strategy { return &strategy{} }) }

// The optional capabilities the bench looks for.
var (
	_ bench.Mixer           = (*strategy)(nil)
	_ bench.Multiprocess    = (*strategy)(nil)
	_ bench.WorkerDefaulter = (*strategy)(nil)
)

// schema keeps River's tables apart from every other strategy's.
const schema = "bench_river"

// River's own benchmark (`river bench`, cmd/river/riverbench) configures
// its client for throughput with these; the strategy does the same, so
// that the bench compares against River at its best.
const (
	// fetchCooldown is the least time between two fetches of one
	// producer: River's benchmark uses 2 ms (the client's default is
	// 100 ms).
	fetchCooldown = 2 * time.Millisecond
	// fetchPollInterval is how often a producer fetches without being
	// told to (the client's default is 1 s).
	fetchPollInterval = 20 * time.Millisecond
	// subscribeChanSize is the event subscription's buffer: River drops
	// events rather than block its completer, so the buffer is as large as
	// River's benchmark makes its own.
	subscribeChanSize = 75_000
	// poolConns: River's CLI opens its pool with pgxpool's default,
	// max(4, CPUs) connections, for its fetches, completions and inserts;
	// four more serve the bench producer's four inserting goroutines so
	// that they never queue River's fetches and completions.
	poolConns = 8
	// processConns is the pool of each client of a multi-process run:
	// pgxpool's default, max(4, CPUs), as River's CLI opens it, for the
	// client's fetches, completions and listener; the producer's inserts
	// go through the strategy's own pool.
	processConns = 0
	// applicationName marks the strategy's connections in
	// pg_stat_activity; a client of a multi-process run adds its index
	// (river-bench-p2).
	applicationName = "river-bench"
)

// jobArgs is the bench job as River stores it.
type jobArgs struct {
	ID      int64           `json:"id"`
	Payload json.RawMessage `json:"p"`
	// U is the unique key of a --mix job inserted as unique (the bench id
	// of the original): with UniqueOpts.ByArgs the job is unique by it
	// alone (River's unique tag), so that a duplicate carries its own
	// bench id and a duplicate that runs is seen as itself.
	U int64 `json:"u,omitempty" river:"unique"`
}

// Kind is River's kind of every bench job.
func (jobArgs) Kind() string { return "bench" }

// uniqueOpts makes a --mix job unique by its u argument while a job with
// that key is unfinished (available, scheduled, running or waiting for a
// retry), as the bench's unique jobs are: River's default states would
// also count a completed job until River's cleaner deletes it.
var uniqueOpts = river.UniqueOpts{
	ByArgs: true,
	ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled},
}

// worker hands each River job to the bench's handler and gives River the
// handler's word with River's own API: a *bench.SnoozeError snoozes the job
// (river.JobSnooze), any other error fails the attempt, which River retries
// at NextRetry.
type worker struct {
	river.WorkerDefaults[jobArgs]
	handle bench.Handler
	// proc is the index of the client (Env.Processes) the worker is
	// registered with: Job.Process.
	proc int
	// backoff, when not 0, is the delay before a failed attempt runs
	// again (bench.Env.RetryBackoff); 0 leaves it to River's retry policy.
	backoff time.Duration
}

// Work runs the bench's handler for j. ReadyAt is the job's scheduled_at:
// River sets it to when a job inserted, scheduled, retried or snoozed is
// due, and fetches no job before it.
func (w *worker) Work(ctx context.Context, j *river.Job[jobArgs]) error {
	err := w.handle(ctx, bench.Job{ID: j.Args.ID, Payload: j.Args.Payload, Process: w.proc, ReadyAt: j.ScheduledAt})
	if sn := (*bench.SnoozeError)(nil); errors.As(err, &sn) {
		return river.JobSnooze(sn.Delay)
	}
	return err
}

// NextRetry is when a failed attempt of j runs again: after the bench's
// backoff, or, without one, when River's client retry policy says (the
// zero time).
func (w *worker) NextRetry(*river.Job[jobArgs]) time.Time {
	if w.backoff <= 0 {
		return time.Time{}
	}
	return time.Now().Add(w.backoff)
}

// strategy is River through its published Go module, configured as its own
// benchmark configures itself: 2,000 workers unless --workers says
// otherwise (a River worker is a goroutine, and the number of free worker
// slots is the LIMIT of its fetch query, so the worker count is also the
// fetch batch), a 2 ms fetch cooldown, a 20 ms poll, and inserts in
// batches (InsertManyFast). River's completer batches completions by
// itself and has no public settings.
//
// It runs --mix with River's own API for each kind: a failing attempt
// returns its error and River retries it at the worker's NextRetry
// (Env.RetryBackoff), a snoozing run returns river.JobSnooze, scheduled
// jobs are inserted with InsertOpts.ScheduledAt and unique ones with
// InsertOpts.UniqueOpts, in batches (InsertMany, whose results say which
// were UniqueSkippedAsDuplicate), and cancels go through JobCancel.
//
// With --processes N it runs N River clients, each with a pool and a
// listener of its own (Work).
type strategy struct {
	url    string
	pool   *pgxpool.Pool
	insert *river.Client[pgx.Tx] // insert-only client
	fetch  fetchTracer
}

// Name is "river".
func (s *strategy) Name() string { return "river" }

// DefaultWorkers is River's own benchmark's worker count.
func (s *strategy) DefaultWorkers() int { return cli.RiverWorkers }

// Multiprocess reports that Work runs Env.Processes River clients.
func (s *strategy) Multiprocess() bool { return true }

// newPool opens a pool of conns connections (0: pgxpool's default) named
// app in pg_stat_activity, whose fetch statements the strategy's tracer
// times.
func (s *strategy) newPool(ctx context.Context, app string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		return nil, err
	}
	if conns > 0 {
		cfg.MaxConns = conns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.Tracer = &s.fetch
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Setup migrates River's tables into a fresh schema and makes the
// insert-only client the producer uses.
func (s *strategy) Setup(ctx context.Context, url string) error {
	s.url = url
	var err error
	if s.pool, err = s.newPool(ctx, applicationName, poolConns); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema, schema)); err != nil {
		return err
	}
	m, err := rivermigrate.New(riverpgxv5.New(s.pool), &rivermigrate.Config{Schema: schema, Logger: quiet()})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	s.insert, err = river.NewClient(riverpgxv5.New(s.pool), &river.Config{Schema: schema, Logger: quiet()})
	return err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Tables lists River's tables in the strategy's schema.
func (s *strategy) Tables() []string {
	return []string{schema + ".river_job", schema + ".river_leader", schema + ".river_queue", schema + ".river_client", schema + ".river_client_queue"}
}

// MaxBatch is the largest batch the producer inserts at once.
func (s *strategy) MaxBatch() int { return 1000 }

// Enqueue inserts one job with Insert, or several with InsertManyFast.
func (s *strategy) Enqueue(ctx context.Context, jobs []bench.Job) error {
	if len(jobs) == 1 {
		_, err := s.insert.Insert(ctx, jobArgs{ID: jobs[0].ID, Payload: jobs[0].Payload}, nil)
		return err
	}
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: jobArgs{ID: j.ID, Payload: j.Payload}}
	}
	_, err := s.insert.InsertManyFast(ctx, params)
	return err
}

// Work runs env.Processes River clients on the default queue until ctx
// ends, then stops them gracefully. The env.Workers workers are split
// between the clients (the first ones take one more when they do not
// divide evenly), so the total concurrency does not depend on
// --processes. With one process the client uses the strategy's pool, which
// the producer's insert-only client shares. With several, each client has
// a pool of its own (processConns) and so its own listener, and its own
// ID, as separate processes would: they elect one leader, whose scheduler
// and other maintenance serve all, and the producer's inserts (through the
// insert-only client) reach them by River's insert notification and their
// fetch polls. Every client registers the same worker, which hands the
// bench the index of its client as Job.Process.
func (s *strategy) Work(ctx context.Context, env bench.Env) error {
	n := max(env.Processes, 1)
	if env.Workers < n {
		return fmt.Errorf("river: %d workers cannot make %d processes", env.Workers, n)
	}
	// River's fetch statement is its claim: the tracer times it, on every
	// client's pool.
	s.fetch.observe.Store(&env.ObserveClaim)
	defer s.fetch.observe.Store(nil)

	procs := make([]*process, 0, n)
	stopAll := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		errs := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			wg.Go(func() { errs[i] = p.stop(sctx) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	stamp := strings.Replace(time.Now().UTC().Format("20060102T150405.000000"), ".", "_", 1)
	for i := range n {
		workers := env.Workers / n
		if i < env.Workers%n {
			workers++
		}
		p := &process{pool: s.pool}
		id := "" // River's default: host and time
		if n > 1 {
			var err error
			if p.pool, err = s.newPool(ctx, fmt.Sprintf("%s-p%d", applicationName, i), processConns); err != nil {
				return errors.Join(err, stopAll())
			}
			p.own = true
			id = fmt.Sprintf("river_bench_%s_p%d", stamp, i)
		}
		procs = append(procs, p)
		if err := p.start(ctx, env, i, workers, id); err != nil {
			return errors.Join(err, stopAll())
		}
	}
	<-ctx.Done()
	return stopAll()
}

// process is one River client of Work, with its pool (its own when own)
// and its event subscription.
type process struct {
	pool   *pgxpool.Pool
	own    bool
	client *river.Client[pgx.Tx]
	// unsubscribe ends the subscription and waits for its reader.
	unsubscribe func()
}

// start makes and starts the client of process proc: workers workers on
// the default queue, each job handed to env.Handle as run by proc; id is
// the client's ID ("": River's default).
func (p *process) start(ctx context.Context, env bench.Env, proc, workers int, id string) error {
	ws := river.NewWorkers()
	if err := river.AddWorkerSafely(ws, &worker{handle: env.Handle, proc: proc, backoff: env.RetryBackoff}); err != nil {
		return err
	}
	c, err := river.NewClient(riverpgxv5.New(p.pool), &river.Config{
		ID:                id,
		Schema:            schema,
		Logger:            quiet(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPollInterval,
	})
	if err != nil {
		return err
	}
	// River's pickup latency, as River measures it: from the job's
	// scheduled_at to its executor starting (JobStatistics.QueueWaitDuration),
	// delivered with the event of each run's end (completed, failed or
	// snoozed).
	events, unsubscribe := c.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: subscribeChanSize,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobSnoozed},
	})
	var subWG sync.WaitGroup
	subWG.Go(func() {
		for ev := range events { // closed by unsubscribe
			if ev.JobStats != nil && env.ObservePickup != nil {
				env.ObservePickup(ev.JobStats.QueueWaitDuration)
			}
		}
	})
	p.unsubscribe = func() { unsubscribe(); subWG.Wait() }
	if err := c.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	p.client = c
	return nil
}

// stop stops the client gracefully (its completer flushes and its events
// are delivered before the subscription ends), then closes the pool when
// it is the process's own.
func (p *process) stop(ctx context.Context) error {
	var err error
	if p.client != nil {
		err = p.client.Stop(ctx)
	}
	if p.unsubscribe != nil {
		p.unsubscribe()
	}
	if p.own {
		p.pool.Close()
	}
	return err
}

// EnqueueMix inserts jobs with River's Insert, or several with one
// InsertMany, each scheduled at its RunAt (InsertOpts.ScheduledAt) and
// unique by its UniqueKey when they are set (uniqueOpts). A duplicate's
// reference is the id of the River job that blocked it, which River
// returns with UniqueSkippedAsDuplicate.
func (s *strategy) EnqueueMix(ctx context.Context, jobs []bench.Job) ([]bench.MixResult, error) {
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		opts := &river.InsertOpts{ScheduledAt: j.RunAt}
		if j.UniqueKey != 0 {
			opts.UniqueOpts = uniqueOpts
		}
		params[i] = river.InsertManyParams{Args: jobArgs{ID: j.ID, Payload: j.Payload, U: j.UniqueKey}, InsertOpts: opts}
	}
	var res []*rivertype.JobInsertResult
	if len(params) == 1 {
		r, err := s.insert.Insert(ctx, params[0].Args, params[0].InsertOpts)
		if err != nil {
			return nil, err
		}
		res = []*rivertype.JobInsertResult{r}
	} else {
		var err error
		if res, err = s.insert.InsertMany(ctx, params); err != nil {
			return nil, err
		}
	}
	if len(res) != len(jobs) {
		return nil, fmt.Errorf("river: InsertMany returned %d results for %d jobs", len(res), len(jobs))
	}
	out := make([]bench.MixResult, len(res))
	for i, r := range res {
		out[i] = bench.MixResult{Ref: r.Job.ID, Duplicate: r.UniqueSkippedAsDuplicate}
		if !r.UniqueSkippedAsDuplicate {
			// A result out of order would mix up refs and verdicts.
			var a jobArgs
			if err := json.Unmarshal(r.Job.EncodedArgs, &a); err != nil || a.ID != jobs[i].ID {
				return nil, fmt.Errorf("river: InsertMany's result %d is job %d (%v), not bench job %d", i, a.ID, err, jobs[i].ID)
			}
		}
	}
	return out, nil
}

// Cancel cancels River job ref with JobCancel: true when the job it
// returns is cancelled and never ran (it was waiting: scheduled,
// available or retryable, and then at its first attempt); the result is
// River's state for the job.
func (s *strategy) Cancel(ctx context.Context, ref int64) (bool, string, error) {
	j, err := s.insert.JobCancel(ctx, ref)
	if err != nil {
		return false, "", err
	}
	return j.State == rivertype.JobStateCancelled && j.Attempt == 0, string(j.State), nil
}

// Remaining lists the bench ids of the jobs River has not finished.
func (s *strategy) Remaining(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT (args->>'id')::bigint FROM %s.river_job
		WHERE state NOT IN ('completed', 'discarded', 'cancelled')`, schema))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Close releases the pool.
func (s *strategy) Close() error {
	if s.pool != nil {
		s.pool.Close()
	}
	return nil
}

// fetchMarker starts the SQL of River's fetch: the named query that locks
// available jobs with SKIP LOCKED and sets them running (its driver sends
// the query's name comment with it).
const fetchMarker = "-- name: JobGetAvailable "

// fetchTracer times River's fetch statements, River's equivalent of the
// other strategies' claim, and reports each with the number of jobs it
// locked (the UPDATE's row count). Fetches that lock nothing are not
// recorded, as for every strategy.
type fetchTracer struct {
	observe atomic.Pointer[func(d time.Duration, n int)]
}

type fetchStart struct{}

// TraceQueryStart notes when a fetch statement starts.
func (t *fetchTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.observe.Load() == nil || !strings.HasPrefix(data.SQL, fetchMarker) {
		return ctx
	}
	return context.WithValue(ctx, fetchStart{}, time.Now())
}

// TraceQueryEnd reports a fetch that locked jobs, with its duration.
func (t *fetchTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	start, ok := ctx.Value(fetchStart{}).(time.Time)
	if !ok || data.Err != nil {
		return
	}
	n := int(data.CommandTag.RowsAffected())
	if obs := t.observe.Load(); obs != nil && *obs != nil && n > 0 {
		(*obs)(time.Since(start), n)
	}
}
