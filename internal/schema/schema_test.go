package schema_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestUpDownStatusConcurrent(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := schema.Check(ctx, pool); err == nil {
		t.Fatal("Check passed on an empty database")
	}
	// Several migrators at once: exactly one applies each version.
	var wg sync.WaitGroup
	applied := make([][]int, 4)
	errs := make([]error, 4)
	for i := range applied {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			applied[i], errs[i] = schema.Up(ctx, pool, 0)
		}(i)
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	if total != schema.Latest() {
		t.Fatalf("versions applied across concurrent migrators = %d, want %d", total, schema.Latest())
	}
	if err := schema.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, "SELECT millrace.enqueue('k', '{}')").Scan(&id); err != nil {
		t.Fatalf("enqueue after migrate: %v", err)
	}
	st, err := schema.List(ctx, pool)
	if err != nil || len(st) != schema.Latest() || !st[0].Applied {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if _, err := schema.Down(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'millrace'").Scan(&n)
	if n != 0 {
		t.Fatal("schema still present after down to 0")
	}
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatalf("up again after down: %v", err)
	}
	if _, err := schema.Up(ctx, pool, 99); err == nil {
		t.Fatal("Up to a version this binary lacks succeeded")
	}
}

// TestUpgradeFromV2CarriesJobs: jobs waiting in a version 2 schema, ready
// and scheduled, are in version 3's queue after the upgrade; a finished one
// is not.
// TestUpIgnoresRoleTimeouts: a database whose defaults would cut a
// migration short (statement_timeout and lock_timeout of 50 ms and, from
// PostgreSQL 17, a transaction_timeout of 50 ms, which ends the session):
// the migration from an empty database, which takes far longer, runs to
// the end, and so do Down one version, Up again and Down to nothing.
// Before transaction_timeout was turned off, Up failed on 17.
func TestUpIgnoresRoleTimeouts(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	sets := []string{"statement_timeout = '50ms'", "lock_timeout = '50ms'"}
	if version >= 170000 {
		sets = append(sets, "transaction_timeout = '50ms'")
	}
	db := pgx.Identifier{admin.Config().Database}.Sanitize()
	for _, set := range sets {
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+db+" SET "+set); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	start := time.Now()
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatalf("Up under %v: %v", sets, err)
	}
	if err := schema.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrated in %v under %v", time.Since(start).Round(time.Millisecond), sets)
	// Down one version, up again, and down to nothing, under the same.
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	latest := len(all)
	for _, step := range []struct {
		down bool
		to   int
	}{{true, latest - 1}, {false, 0}, {true, 0}} {
		var err error
		if step.down {
			_, err = schema.Down(ctx, pool, step.to)
		} else {
			_, err = schema.Up(ctx, pool, step.to)
		}
		if err != nil {
			t.Fatalf("down %v to %d under %v: %v", step.down, step.to, sets, err)
		}
	}
}

func TestUpgradeFromV2CarriesJobs(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := schema.Up(ctx, pool, 2); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT millrace.enqueue('ready', '{"n":1}')`,
		`SELECT millrace.enqueue('later', '{"n":2}', p_run_at => now() + interval '1 hour')`,
		`SELECT millrace.enqueue('done', '{"n":3}')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Job 3 finished under v2: a completed ack for its first attempt.
	if _, err := pool.Exec(ctx, `INSERT INTO millrace.ack_0 (job_id, tick_id, token, state, attempt) VALUES (3, 1, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT kind || ':' || state FROM millrace.jobs ORDER BY id`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "ready:available later:scheduled" {
		t.Fatalf("jobs after the upgrade: %v; want the ready one available and the scheduled one scheduled", got)
	}
	if _, err := schema.Down(ctx, pool, 2); err == nil {
		t.Fatal("down from 3 to 2 succeeded; it must refuse")
	}
}

// TestDownOneVersionAndUpAgain: the newest migration's down leaves a
// schema that this binary migrates up again to exactly a fresh install
// (its down drops what the version before it would define otherwise,
// or could not replace: a changed return type).
func TestDownOneVersionAndUpAgain(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	want := snapshot(ctx, t, pool)
	if _, err := schema.Down(ctx, pool, schema.Latest()-1); err != nil {
		t.Fatalf("down to %d: %v", schema.Latest()-1, err)
	}
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := snapshot(ctx, t, pool); got != want {
		t.Fatalf("schema after down one version and up differs from a fresh install:\n%s", firstDiff(got, want))
	}
	var id int64
	if err := pool.QueryRow(ctx, "SELECT id FROM millrace.enqueue_unique('k', '{}', p_unique_key => 'k')").Scan(&id); err != nil {
		t.Fatalf("enqueue after down and up: %v", err)
	}
}
