package schema

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestUpDownStatusConcurrent(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := Check(ctx, pool); err == nil {
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
			applied[i], errs[i] = Up(ctx, pool, 0)
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
	if total != Latest() {
		t.Fatalf("versions applied across concurrent migrators = %d, want %d", total, Latest())
	}
	if err := Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, "SELECT millrace.enqueue('k', '{}')").Scan(&id); err != nil {
		t.Fatalf("enqueue after migrate: %v", err)
	}
	st, err := List(ctx, pool)
	if err != nil || len(st) != Latest() || !st[0].Applied {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if _, err := Down(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'millrace'").Scan(&n)
	if n != 0 {
		t.Fatal("schema still present after down to 0")
	}
	if _, err := Up(ctx, pool, 0); err != nil {
		t.Fatalf("up again after down: %v", err)
	}
	if _, err := Up(ctx, pool, 99); err == nil {
		t.Fatal("Up to a version this binary lacks succeeded")
	}
}
