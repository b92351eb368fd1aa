package storage

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/pgtest"
	"github.com/millrace/millrace/internal/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Claim relies on a pgx batch running as one implicit transaction, so that
// asyncCommit applies to the claim's commit and to nothing after it.
func TestAsyncCommitCoversOnlyTheBatch(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	var b pgx.Batch
	b.Queue(asyncCommit)
	b.Queue("SELECT current_setting('synchronous_commit')")
	br := conn.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var inside string
	if err := br.QueryRow().Scan(&inside); err != nil {
		t.Fatal(err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if inside != "off" || after != "on" {
		t.Fatalf("synchronous_commit inside the batch %q, after it %q; want off, on", inside, after)
	}
}

// A rotation that commits while a claim is under way must not hide the
// jobs producers then write into the new current segment. The test holds
// tick_0 so that a claim stops after its first statements, makes segment 1
// current (as a rotation would) and commits a job into job_1, then lets the
// claim finish. The job must be in that claim or the next one. (Schema
// version 1 fails this test.)
func TestClaimRacingRotationLosesNoJob(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	s := &Store{Pool: pool}
	enqueue := func() (int64, error) {
		return s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false)
	}
	if _, err := enqueue(); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Claim(ctx, "q", 1); err != nil || b == nil || len(b.Jobs) != 1 {
		t.Fatalf("first claim: %v, %+v", err, b)
	}

	// A job the racing claim returns, so that it records its snapshot.
	if _, err := enqueue(); err != nil {
		t.Fatal(err)
	}
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, "LOCK TABLE millrace.tick_0 IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		b   *Batch
		err error
	}
	claimed := make(chan result, 1)
	go func() {
		b, err := s.Claim(ctx, "q", 1)
		claimed <- result{b, err}
	}()
	// Wait until the claim waits for tick_0.
	for i := 0; ; i++ {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE relation = 'millrace.tick_0'::regclass AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if i > 500 {
			t.Fatal("the claim never waited for tick_0")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO millrace.rotation (id, segment) VALUES (nextval('millrace.rotation_id_seq'), 1)"); err != nil {
		t.Fatal(err)
	}
	late, err := enqueue()
	if err != nil {
		t.Fatal(err)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-claimed
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := map[int64]bool{}
	if r.b != nil {
		for _, j := range r.b.Jobs {
			got[j.ID] = true
		}
	}
	next, err := s.Claim(ctx, "q", 1)
	if err != nil {
		t.Fatal(err)
	}
	if next != nil {
		for _, j := range next.Jobs {
			got[j.ID] = true
		}
	}
	if !got[late] {
		t.Fatalf("job %d, committed into the new segment during the claim, was in neither that claim nor the next", late)
	}
}
