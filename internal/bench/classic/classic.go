// Package classic holds five classic Postgres job-queue strategies for the
// millrace bench, each in its own schema:
//
//   - "que": Que 0.x, advisory locks taken by a recursive CTE that walks the
//     (queue, priority, run_at, job_id) index; the job is worked outside any
//     transaction and deleted afterwards.
//   - "skiplocked": one job per transaction with FOR UPDATE SKIP LOCKED,
//     held open while the job is worked.
//   - "skiplocked-batch": the same, BatchSize jobs per transaction.
//   - "skiplocked-lifo": "skiplocked" taking the newest job first.
//   - "cursor": SKIP LOCKED from a per-worker id cursor that is reset to 0
//     every CursorReset (with jitter) and whenever it finds nothing.
//
// The strategies share everything but their tables and their claim SQL: this
// file holds the shared setup, enqueue, worker loop and reconnect logic.
package classic

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/bench"
)

// PollInterval is how long a worker sleeps after a claim that found no job.
// It is short because the bench measures claim cost, not polling.
const PollInterval = 5 * time.Millisecond

// reconnectDelay is how long a worker waits after a failed statement before
// it reconnects and retries.
const reconnectDelay = 200 * time.Millisecond

// applicationName marks the bench's connections in pg_stat_activity.
const applicationName = "millrace-bench"

// step claims and works at most one job or batch on conn. It reports whether
// the worker should go straight on (something was claimed, or a claim must
// be retried at once) rather than sleep PollInterval. Statements after a
// successful claim run with a context that ctx's cancellation does not
// reach, so a job that has started is always finished.
type step func(ctx context.Context, conn *pgx.Conn) (busy bool, err error)

// spec is what makes one strategy: its name, schema, tables and claim loop.
type spec struct {
	name       string
	schema     string
	ddl        string // run after CREATE SCHEMA; names tables schema-qualified
	payloadCol string // the jsonb column the payload is stored in
	// newStep makes the claim loop body of one worker, which may keep state
	// (the cursor) across calls.
	newStep func(env bench.Env) step
}

// strategy implements bench.Strategy for a spec.
type strategy struct {
	spec
	pool *pgxpool.Pool // Setup, Enqueue and Remaining; workers have their own connections
}

func register(sp spec) {
	bench.Register(sp.name, func() bench.Strategy { return &strategy{spec: sp} })
}

func (s *strategy) table() string { return s.schema + ".jobs" }

// Name is the strategy's --strategies name.
func (s *strategy) Name() string { return s.name }

// Tables is the strategy's one jobs table.
func (s *strategy) Tables() []string { return []string{s.table()} }

// MaxBatch is the largest Enqueue batch: one multi-row INSERT.
func (s *strategy) MaxBatch() int { return 1000 }

// Setup opens the strategy's pool, drops its schema and creates it afresh.
func (s *strategy) Setup(ctx context.Context, url string) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = 32 // the paced producer enqueues from up to 64 goroutines
	cfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	if s.pool != nil {
		s.pool.Close()
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return err
	}
	sql := fmt.Sprintf("DROP SCHEMA IF EXISTS %[1]s CASCADE; CREATE SCHEMA %[1]s; %s", s.schema, s.ddl)
	_, err = s.pool.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

// Enqueue inserts one job with a single-row INSERT, or several with one
// INSERT from unnest'ed arrays; either way in one autocommit statement.
func (s *strategy) Enqueue(ctx context.Context, jobs []bench.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if len(jobs) == 1 {
		_, err := s.pool.Exec(ctx, fmt.Sprintf("INSERT INTO %s (id, %s) VALUES ($1, $2::text::jsonb)", s.table(), s.payloadCol),
			jobs[0].ID, payloadText(jobs[0].Payload))
		return err
	}
	ids := make([]int64, len(jobs))
	payloads := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], payloads[i] = j.ID, payloadText(j.Payload)
	}
	_, err := s.pool.Exec(ctx, fmt.Sprintf("INSERT INTO %s (id, %s) SELECT * FROM unnest($1::bigint[], $2::text[]::jsonb[])", s.table(), s.payloadCol),
		ids, payloads)
	return err
}

// payloadText is a payload as jsonb input text; an empty payload is JSON null.
func payloadText(p []byte) string {
	if len(p) == 0 {
		return "null"
	}
	return string(p)
}

// Remaining lists the bench ids of the jobs still in the table. It tries
// three times, since a pooled connection may have died with a restart of the
// server during the run.
func (s *strategy) Remaining(ctx context.Context) (ids []int64, err error) {
	for range 3 {
		rows, _ := s.pool.Query(ctx, "SELECT id FROM "+s.table()+" ORDER BY id")
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err == nil || ctx.Err() != nil {
			break
		}
	}
	return ids, err
}

// Close releases the pool.
func (s *strategy) Close() error {
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	return nil
}

// Multiprocess reports that Work honours Env.Processes.
func (s *strategy) Multiprocess() bool { return true }

// Work runs env.Workers workers, each on its own connection, until ctx is
// cancelled and every worker has finished the job it was working. With
// env.Processes > 1 the workers are split into that many groups (the first
// ones take one more when they do not divide evenly) whose jobs carry the
// group's index: a classic worker shares nothing with the others but the
// table, so a group is what a process of its own would be.
func (s *strategy) Work(ctx context.Context, env bench.Env) error {
	if _, err := pgx.ParseConfig(env.URL); err != nil {
		return err
	}
	n := max(env.Processes, 1)
	var wg sync.WaitGroup
	for p := range n {
		penv := env
		if n > 1 {
			penv.Handle = func(ctx context.Context, j bench.Job) error {
				j.Process = p
				return env.Handle(ctx, j)
			}
		}
		workers := env.Workers / n
		if p < env.Workers%n {
			workers++
		}
		for range workers {
			wg.Go(func() { runWorker(ctx, env.URL, s.newStep(penv)) })
		}
	}
	wg.Wait()
	return nil
}

// runWorker is one worker: connect, run step until ctx ends; on any error
// drop the connection (which rolls back its transaction and releases its
// advisory locks), wait a moment and reconnect.
func runWorker(ctx context.Context, url string, st step) {
	var conn *pgx.Conn
	defer func() { closeConn(conn) }()
	for ctx.Err() == nil {
		if conn == nil {
			c, err := connect(ctx, url)
			if err != nil {
				sleep(ctx, reconnectDelay)
				continue
			}
			conn = c
		}
		busy, err := st(ctx, conn)
		switch {
		case err != nil:
			closeConn(conn)
			conn = nil
			sleep(ctx, reconnectDelay)
		case !busy:
			sleep(ctx, PollInterval)
		}
	}
}

func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = applicationName
	return pgx.ConnectConfig(ctx, cfg)
}

func closeConn(conn *pgx.Conn) {
	if conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// observe reports a claim that returned n > 0 jobs and took since start.
func observe(env bench.Env, start time.Time, n int) {
	if n > 0 && env.ObserveClaim != nil {
		env.ObserveClaim(time.Since(start), n)
	}
}

// claimed is one job a claim returned.
type claimed struct {
	id      int64
	payload []byte
}

// workInTx is the SKIP LOCKED body shared by skiplocked, skiplocked-batch and
// cursor: BEGIN; run claim (a SELECT id, payload ... FOR UPDATE SKIP LOCKED)
// with args; work each row with the transaction open; DELETE the rows whose
// handler succeeded; COMMIT. A failed handler's row stays and is retried
// after the commit releases its lock. It returns the claimed ids.
func workInTx(ctx context.Context, conn *pgx.Conn, env bench.Env, table, claim string, args ...any) ([]int64, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	start := time.Now()
	rows, _ := tx.Query(ctx, claim, args...)
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		return c, r.Scan(&c.id, &c.payload)
	})
	if err != nil {
		return nil, err
	}
	observe(env, start, len(jobs))
	if len(jobs) == 0 {
		return nil, tx.Commit(ctx)
	}
	fin := context.WithoutCancel(ctx)
	var ids, done []int64
	for _, j := range jobs {
		ids = append(ids, j.id)
		if env.Handle(fin, bench.Job{ID: j.id, Payload: j.payload}) == nil {
			done = append(done, j.id)
		}
	}
	switch len(done) {
	case 0:
	case 1:
		_, err = tx.Exec(fin, "DELETE FROM "+table+" WHERE id = $1", done[0])
	default:
		_, err = tx.Exec(fin, "DELETE FROM "+table+" WHERE id = ANY($1)", done)
	}
	if err != nil {
		return nil, err
	}
	return ids, tx.Commit(fin)
}
