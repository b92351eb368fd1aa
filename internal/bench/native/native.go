// Package native is the bench strategy "millrace": the real millrace client,
// through its public API, in its own database schema.
package native

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/bench"
)

func init() { bench.Register("millrace", func() bench.Strategy { return &Strategy{} }) }

// args is the bench job as millrace stores it.
type args struct {
	ID      int64           `json:"id"`
	Payload json.RawMessage `json:"p"`
}

func (args) Kind() string { return "bench" }

// Strategy runs the bench's jobs through a millrace.Client.
type Strategy struct {
	pool   *pgxpool.Pool
	client atomic.Pointer[millrace.Client] // inserts go through the working client once it runs
}

// Name is "millrace".
func (s *Strategy) Name() string { return "millrace" }

// Setup drops any previous millrace schema and migrates a fresh one.
func (s *Strategy) Setup(ctx context.Context, url string) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = 48
	cfg.ConnConfig.RuntimeParams["application_name"] = "millrace-bench"
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "DROP SCHEMA IF EXISTS millrace CASCADE"); err != nil {
		return err
	}
	if err := millrace.Migrate(ctx, s.pool); err != nil {
		return err
	}
	c, err := millrace.NewClient(s.pool, millrace.Config{Logger: quiet()})
	s.client.Store(c)
	return err
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

// Tables lists every table of the schema that grows with jobs: the
// partitions of the ring and the plain tables, read from the catalog.
func (s *Strategy) Tables() []string {
	rows, err := s.pool.Query(context.Background(), `SELECT format('%I.%I', n.nspname, c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'millrace' AND c.relkind = 'r' ORDER BY c.relname`)
	if err != nil {
		return nil
	}
	out, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	return out
}

// MaxBatch is the largest InsertMany the producer sends.
func (s *Strategy) MaxBatch() int { return 1000 }

// Enqueue inserts one job with Insert, or several with InsertMany (COPY).
func (s *Strategy) Enqueue(ctx context.Context, jobs []bench.Job) error {
	if len(jobs) == 1 {
		_, err := s.client.Load().Insert(ctx, args{ID: jobs[0].ID, Payload: jobs[0].Payload}, nil)
		return err
	}
	params := make([]millrace.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = millrace.InsertManyParams{Args: args{ID: j.ID, Payload: j.Payload}}
	}
	_, err := s.client.Load().InsertMany(ctx, params)
	return err
}

// Work runs a millrace client with env.Workers workers on the default queue
// until ctx ends, then stops it gracefully.
func (s *Strategy) Work(ctx context.Context, env bench.Env) error {
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[args]) error {
		return env.Handle(ctx, bench.Job{ID: j.Args.ID, Payload: j.Args.Payload})
	}))
	c, err := millrace.NewClient(s.pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: env.Workers}},
		Logger:  quiet(),
		OnClaim: func(_ string, d time.Duration, n int) {
			if env.ObserveClaim != nil {
				env.ObserveClaim(d, n)
			}
		},
	})
	if err != nil {
		return err
	}
	// Inserts from the bench wake this client's workers directly too.
	s.client.Store(c)
	if err := c.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Stop(sctx)
}

// Remaining lists the bench ids of jobs not yet finished (the public view
// millrace.jobs).
func (s *Strategy) Remaining(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT (args->>'id')::bigint FROM millrace.jobs")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Close releases the pool.
func (s *Strategy) Close() error {
	if s.pool != nil {
		s.pool.Close()
	}
	return nil
}
