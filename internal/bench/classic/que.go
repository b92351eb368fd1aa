package classic

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/bench"
)

// Que 0.x: jobs ordered by (queue, priority, run_at, job_id), locked with
// session advisory locks rather than row locks, so no transaction is held
// while a job is worked.

func init() {
	register(spec{
		name:       "que",
		schema:     "bench_que",
		payloadCol: "args",
		ddl: `CREATE TABLE bench_que.jobs (
			queue       text        NOT NULL DEFAULT '',
			priority    smallint    NOT NULL DEFAULT 100,
			run_at      timestamptz NOT NULL DEFAULT now(),
			job_id      bigserial   NOT NULL,
			id          bigint      NOT NULL,
			args        jsonb       NOT NULL DEFAULT '[]',
			error_count integer     NOT NULL DEFAULT 0,
			PRIMARY KEY (queue, priority, run_at, job_id))`,
		newStep: queStep,
	})
}

// queLock is Que 0.x's lock_job: walk the index one row at a time, trying
// each job's advisory lock until one is taken. The recursion stops at the
// first row it locks (NOT jobs.locked) and at the end of the queue (a NULL
// row's lock attempt is NULL).
const queLock = `WITH RECURSIVE jobs AS (
  SELECT (j).*, pg_try_advisory_lock((j).job_id) AS locked
  FROM (
    SELECT j FROM bench_que.jobs AS j
    WHERE queue = $1::text AND run_at <= now()
    ORDER BY priority, run_at, job_id
    LIMIT 1
  ) AS t1
  UNION ALL (
    SELECT (j).*, pg_try_advisory_lock((j).job_id) AS locked
    FROM (
      SELECT (
        SELECT j FROM bench_que.jobs AS j
        WHERE queue = $1::text AND run_at <= now()
          AND (priority, run_at, job_id) > (jobs.priority, jobs.run_at, jobs.job_id)
        ORDER BY priority, run_at, job_id
        LIMIT 1
      ) AS j
      FROM jobs
      WHERE jobs.job_id IS NOT NULL AND NOT jobs.locked
      LIMIT 1
    ) AS t1
  )
)
SELECT queue, priority, run_at, job_id, id, args FROM jobs WHERE locked LIMIT 1`

// queKey picks one job by its primary key.
const queKey = ` WHERE queue = $1 AND priority = $2 AND run_at = $3 AND job_id = $4`

// queRecheck is Que's check that the job locked is still there: the CTE's
// snapshot may predate another worker's DELETE and unlock.
const queRecheck = `SELECT 1 FROM bench_que.jobs` + queKey

const queDelete = `DELETE FROM bench_que.jobs` + queKey

// queRetry is Que's failure path, without the backoff: count the error and
// leave the job to be retried.
const queRetry = `UPDATE bench_que.jobs SET error_count = error_count + 1` + queKey

func queStep(env bench.Env) step {
	return func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		var (
			queue    string
			priority int16
			runAt    time.Time
			jobID    int64
			job      bench.Job
		)
		start := time.Now()
		err := conn.QueryRow(ctx, queLock, "").Scan(&queue, &priority, &runAt, &jobID, &job.ID, &job.Payload)
		if err == pgx.ErrNoRows {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// The session holds the lock now: finish whatever ctx does.
		fin := context.WithoutCancel(ctx)
		key := []any{queue, priority, runAt, jobID}
		var one int
		switch err := conn.QueryRow(fin, queRecheck, key...).Scan(&one); err {
		case nil:
		case pgx.ErrNoRows: // worked and deleted meanwhile: let go and try again
			return true, unlock(fin, conn, jobID)
		default:
			return false, err
		}
		observe(env, start, 1)
		finish := queDelete
		if env.Handle(fin, job) != nil {
			finish = queRetry
		}
		if _, err := conn.Exec(fin, finish, key...); err != nil {
			return false, err
		}
		return true, unlock(fin, conn, jobID)
	}
}

func unlock(ctx context.Context, conn *pgx.Conn, jobID int64) error {
	_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", jobID)
	return err
}
