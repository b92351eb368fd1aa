package classic

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/bench"
)

// CursorReset is how often a cursor worker goes back to the start of the
// queue, ±20% jitter per reset.
const CursorReset = 10 * time.Second

// The 2015 fix for SKIP LOCKED queues slowed by dead index entries at the
// head of the queue: each worker claims from just past the last id it
// worked, so it does not rescan the dead tuples its own and others' deletes
// left behind, and goes back to the start now and then for jobs it skipped.

// cursorStart is the cursor at the start of the queue. It is below every id
// rather than 0, since the bench numbers its jobs from 0.
const cursorStart = math.MinInt64

const cursorClaim = "SELECT id, payload FROM bench_cursor.jobs WHERE id > $1 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1"

func init() {
	register(spec{
		name:       "cursor",
		schema:     "bench_cursor",
		payloadCol: "payload",
		ddl:        "CREATE TABLE bench_cursor.jobs (id bigint PRIMARY KEY, payload jsonb NOT NULL)",
		newStep:    cursorStep,
	})
}

func cursorStep(env bench.Env) step {
	var last int64 = cursorStart
	resetAt := time.Now().Add(jitter(CursorReset))
	return func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if time.Now().After(resetAt) {
			last, resetAt = cursorStart, time.Now().Add(jitter(CursorReset))
		}
		ids, err := workInTx(ctx, conn, env, "bench_cursor.jobs", cursorClaim, last)
		if err != nil {
			return false, err
		}
		if len(ids) == 0 {
			// Nothing past the cursor: start over at once if the cursor
			// was ahead, else poll.
			wasAhead := last != cursorStart
			last = cursorStart
			return wasAhead, nil
		}
		last = ids[len(ids)-1]
		return true, nil
	}
}

// jitter returns d ±20%, uniformly.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
