package millrace_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
)

// TestLookupsReadOnlyTheirBuckets: a unique insert that meets its key, a
// cancel and a job's state look for the job's history only in the buckets
// that can hold it (from its creation until now: at most two of each
// ring), never in all 68. In schema 5 each of them planned and locked
// every bucket, and a reclaim paid that once per unique key while it held
// its slot's ACCESS EXCLUSIVE locks, stalling every producer and claimer
// (measured: 1.3 s per reclaim at 800 jobs/s with the bench's mix).
func TestLookupsReadOnlyTheirBuckets(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	later := &millrace.InsertOpts{RunAt: time.Now().Add(time.Hour)}
	unique := &millrace.InsertOpts{RunAt: later.RunAt, Unique: &millrace.UniqueOpts{ByArgs: true}}
	orig := mustInsert(t, c, countArgs{N: 1}, unique)
	waiting := mustInsert(t, c, countArgs{N: 2}, later)

	// buckets runs f in a transaction and counts the history buckets its
	// statements locked (a relation lock is held until the transaction
	// ends, so every bucket planned or read is counted).
	buckets := func(what string, f func(tx pgx.Tx) error) int {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := f(tx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			JOIN pg_namespace s ON s.oid = c.relnamespace
			WHERE l.pid = pg_backend_pid() AND s.nspname = 'millrace' AND c.relname LIKE 'finished\_%' AND c.relkind = 'r'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const most = 4 // two buckets of each ring when the range crosses a boundary
	for _, step := range []struct {
		what string
		f    func(tx pgx.Tx) error
	}{
		{"a unique insert that meets its key", func(tx pgx.Tx) error {
			r, err := c.InsertTx(ctx, tx, countArgs{N: 1}, unique)
			if err == nil && (!r.Duplicate || r.ID != orig.ID) {
				t.Errorf("the insert was not a duplicate of job %d: %+v", orig.ID, r)
			}
			return err
		}},
		{"the state of a scheduled job", func(tx pgx.Tx) error {
			var s string
			return tx.QueryRow(ctx, "SELECT millrace.job_state($1)", waiting.ID).Scan(&s)
		}},
		{"a cancel of a scheduled job", func(tx pgx.Tx) error {
			r, err := millrace.Cancel(ctx, tx, waiting.ID)
			if err == nil && r != millrace.Cancelled {
				t.Errorf("cancel = %v; want %v", r, millrace.Cancelled)
			}
			return err
		}},
	} {
		if n := buckets(step.what, step.f); n > most {
			t.Errorf("%s locked %d history buckets; want at most %d", step.what, n, most)
		}
	}
}

// TestHistoryBucketsCoverTheirRange: every time in a range falls in a
// bucket (of either ring) that history_buckets lists for the range, and a
// range longer than a ring lists the whole ring.
func TestHistoryBucketsCoverTheirRange(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	var missed int
	// 20,000 ranges of up to 80 days starting anywhere in two years, a
	// time inside each, and the bucket each ring gives that time.
	if err := pool.QueryRow(ctx, `
		WITH r AS (
			SELECT a, a + (random() * random() * interval '80 days') AS b
			FROM (SELECT timestamptz '2026-01-01' + random() * interval '730 days' AS a FROM generate_series(1, 20000)) x),
		p AS (SELECT a, b, a + random() * (b - a) AS t FROM r)
		SELECT count(*) FROM p
		WHERE NOT millrace.history_bucket(1::smallint, t) = ANY (millrace.history_buckets(a, b))
		   OR NOT millrace.history_bucket(3::smallint, t) = ANY (millrace.history_buckets(a, b))`).Scan(&missed); err != nil {
		t.Fatal(err)
	}
	if missed != 0 {
		t.Fatalf("%d times fell in a bucket their range did not list", missed)
	}
	for _, c := range []struct {
		from, to string
		want     int
	}{
		{"2026-03-01 10:00Z", "2026-03-01 10:00Z", 2},  // one of each ring
		{"2026-03-01 11:59Z", "2026-03-01 12:01Z", 3},  // across a two-hour boundary
		{"2026-03-01 23:59Z", "2026-03-02 00:01Z", 4},  // across midnight
		{"2026-03-01 00:00Z", "2026-03-05 00:00Z", 41}, // the whole completed ring and five days
		{"2026-03-01 00:00Z", "2026-05-01 00:00Z", 68}, // both rings whole
	} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT cardinality(millrace.history_buckets($1::timestamptz, $2::timestamptz))",
			c.from, c.to).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("history_buckets(%s, %s) lists %d buckets; want %d", c.from, c.to, n, c.want)
		}
	}
}
