package millrace_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/storage"
)

// betweenReads runs before the statement after its first: a job that
// finishes between the first two reads of a job.
type betweenReads struct {
	millrace.DB
	n      int
	before func()
}

func (b *betweenReads) next() {
	if b.n++; b.n == 2 {
		b.before()
	}
}

func (b *betweenReads) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b.next()
	return b.DB.Query(ctx, sql, args...)
}

func (b *betweenReads) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	b.next()
	return b.DB.QueryRow(ctx, sql, args...)
}

// TestJobByIDNeverShowsAFinishedJobLive (issue 32): JobByID reads a job as
// ops.GetJob does (storage.GetJob), its live row before its history, so a
// job that completes between the two reads is shown completed. Before,
// JobByID read the state (history first) before history's rows, and
// showed such a job running beside its completed attempt.
func TestJobByIDNeverShowsAFinishedJobLive(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res := mustInsert(t, c, countArgs{N: 1}, &millrace.InsertOpts{Queue: "q"})
	s := &storage.Store{Pool: pool}
	bs, err := s.Claim(ctx, "q", 1, 1, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20})
	if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 1 || bs[0].Jobs[0].ID != res.ID {
		t.Fatalf("claim: %+v %v", bs, err)
	}
	if j, err := millrace.JobByID(ctx, pool, res.ID); err != nil || j.State != millrace.JobRunning || len(j.Attempts) != 0 {
		t.Fatalf("claimed: %+v %v; want running, no attempt", j, err)
	}
	b := bs[0]
	db := &betweenReads{DB: pool, before: func() {
		if _, err := s.Flush(ctx, 1, 1, false, []storage.Ack{{Batch: b, Job: &b.Jobs[0], State: storage.AckCompleted,
			Started: time.Now(), Finished: time.Now()}}, []*storage.Batch{b}); err != nil {
			t.Fatal(err)
		}
	}}
	j, err := millrace.JobByID(ctx, db, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if db.n < 2 {
		t.Fatalf("JobByID sent %d statements; the job was to complete after the first", db.n)
	}
	if j.State != millrace.JobCompleted || len(j.Attempts) != 1 || j.Attempts[0].State != "completed" || j.Attempt != 1 {
		t.Errorf("job %d completed between the reads; JobByID says %s, attempt %d, attempts %+v", res.ID, j.State, j.Attempt, j.Attempts)
	}
	// History keeps a completed job without its args.
	if j.Queue != "q" || j.Kind != "count" || j.Args != nil {
		t.Errorf("job's row: queue %q kind %q args %s; want q, count, no args", j.Queue, j.Kind, j.Args)
	}
}
