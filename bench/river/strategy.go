package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/bench"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

func init() { bench.Register("river", func() bench.Strategy { return &strategy{} }) }

// schema keeps River's tables apart from every other strategy's.
const schema = "bench_river"

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
// benchmark configures it for throughput (short fetch cooldown and poll).
type strategy struct {
	pool   *pgxpool.Pool
	insert *river.Client[pgx.Tx] // insert-only client
}

func (s *strategy) Name() string { return "river" }

func (s *strategy) Setup(ctx context.Context, url string) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = 48
	cfg.ConnConfig.RuntimeParams["application_name"] = "river-bench"
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
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		return err
	}
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
