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
)

func init() { bench.Register("river", func() bench.Strategy { return &strategy{} }) }

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
)

type jobArgs struct {
	ID      int64           `json:"id"`
	Payload json.RawMessage `json:"p"`
}

func (jobArgs) Kind() string { return "bench" }

type worker struct {
	river.WorkerDefaults[jobArgs]
	handle bench.Handler
}

func (w *worker) Work(ctx context.Context, j *river.Job[jobArgs]) error {
	return w.handle(ctx, bench.Job{ID: j.Args.ID, Payload: j.Args.Payload})
}

// strategy is River through its published Go module, configured as its own
// benchmark configures itself: 2,000 workers unless --workers says
// otherwise (a River worker is a goroutine, and the number of free worker
// slots is the LIMIT of its fetch query, so the worker count is also the
// fetch batch), a 2 ms fetch cooldown, a 20 ms poll, and inserts in
// batches (InsertManyFast). River's completer batches completions by
// itself and has no public settings.
type strategy struct {
	pool   *pgxpool.Pool
	insert *river.Client[pgx.Tx] // insert-only client
	fetch  fetchTracer
}

func (s *strategy) Name() string { return "river" }

// DefaultWorkers is River's own benchmark's worker count.
func (s *strategy) DefaultWorkers() int { return cli.RiverWorkers }

func (s *strategy) Setup(ctx context.Context, url string) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = poolConns
	cfg.ConnConfig.RuntimeParams["application_name"] = "river-bench"
	cfg.ConnConfig.Tracer = &s.fetch
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
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

func (s *strategy) Tables() []string {
	return []string{schema + ".river_job", schema + ".river_leader", schema + ".river_queue", schema + ".river_client", schema + ".river_client_queue"}
}

func (s *strategy) MaxBatch() int { return 1000 }

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

func (s *strategy) Work(ctx context.Context, env bench.Env) error {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{handle: env.Handle}); err != nil {
		return err
	}
	c, err := river.NewClient(riverpgxv5.New(s.pool), &river.Config{
		Schema:            schema,
		Logger:            quiet(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: env.Workers}},
		Workers:           workers,
		FetchCooldown:     fetchCooldown,
		FetchPollInterval: fetchPollInterval,
	})
	if err != nil {
		return err
	}
	// River's fetch statement is its claim: the tracer times it.
	s.fetch.observe.Store(&env.ObserveClaim)
	defer s.fetch.observe.Store(nil)
	// River's pickup latency, as River measures it: from the job's
	// scheduled_at to its executor starting (JobStatistics.QueueWaitDuration),
	// delivered with each finished job's event.
	events, unsubscribe := c.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: subscribeChanSize,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	var subWG sync.WaitGroup
	subWG.Add(1)
	go func() {
		defer subWG.Done()
		for ev := range events { // closed by unsubscribe
			if ev.JobStats != nil && env.ObservePickup != nil {
				env.ObservePickup(ev.JobStats.QueueWaitDuration)
			}
		}
	}()
	defer func() { unsubscribe(); subWG.Wait() }()

	if err := c.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Stop(sctx)
}

func (s *strategy) Remaining(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT (args->>'id')::bigint FROM %s.river_job
		WHERE state NOT IN ('completed', 'discarded', 'cancelled')`, schema))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

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

func (t *fetchTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.observe.Load() == nil || !strings.HasPrefix(data.SQL, fetchMarker) {
		return ctx
	}
	return context.WithValue(ctx, fetchStart{}, time.Now())
}

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
