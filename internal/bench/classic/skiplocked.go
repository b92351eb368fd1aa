package classic

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/bench"
)

// BatchSize is how many jobs skiplocked-batch claims and works per
// transaction.
const BatchSize = 10

// skipLockedDDL is the jobs table of both SKIP LOCKED strategies: the bench
// id as primary key, whose index the claim walks.
const skipLockedDDL = `CREATE TABLE %s.jobs (
	id         bigint      PRIMARY KEY,
	payload    jsonb       NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now())`

func init() {
	registerSkipLocked("skiplocked", "bench_skiplocked", 1, "id")
	registerSkipLocked("skiplocked-batch", "bench_skiplocked_batch", BatchSize, "id")
	// LIFO: the newest job first, so that the index scan starts at the
	// right edge, where the jobs inserted since the last claim are, rather
	// than at the left, behind the dead entries of every job worked (the
	// remedy a YugabyteDB note gives for its LSM storage). Oldest jobs wait
	// while newer ones keep coming.
	registerSkipLocked("skiplocked-lifo", "bench_skiplocked_lifo", 1, "id DESC")
}

// registerSkipLocked registers a strategy that claims up to limit jobs per
// transaction in the given key order, works them with the transaction open,
// then deletes them.
func registerSkipLocked(name, schema string, limit int, order string) {
	claim := "SELECT id, payload FROM " + schema + ".jobs ORDER BY " + order + " FOR UPDATE SKIP LOCKED LIMIT $1"
	register(spec{
		name:       name,
		schema:     schema,
		payloadCol: "payload",
		ddl:        fmt.Sprintf(skipLockedDDL, schema),
		newStep: func(env bench.Env) step {
			return func(ctx context.Context, conn *pgx.Conn) (bool, error) {
				ids, err := workInTx(ctx, conn, env, schema+".jobs", claim, limit)
				return len(ids) > 0, err
			}
		},
	})
}
