package millrace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
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

// TestQueueCountsCountCancelled: cancelled jobs are counted with the
// other finished ones (they appeared in no count), from history's tally
// and the history written since its newest round, as QueueCounts, the
// operator commands and the dashboard read them.
func TestQueueCountsCountCancelled(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()}) // inserts only: nothing runs
	if err != nil {
		t.Fatal(err)
	}
	cancel := func() {
		t.Helper()
		r := mustInsert(t, c, countArgs{N: 1}, &millrace.InsertOpts{Queue: "q"})
		if res, err := millrace.Cancel(ctx, pool, r.ID); err != nil || res != millrace.Cancelled {
			t.Fatalf("cancel of job %d: %v, %v", r.ID, res, err)
		}
	}
	counts := func(what string, want millrace.QueueCount) {
		t.Helper()
		cs, err := millrace.QueueCounts(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0] != want {
			t.Errorf("%s: QueueCounts = %+v; want [%+v]", what, cs, want)
		}
		qs, err := ops.Queues(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(qs); len(qs) != 1 || qs[0].Cancelled != want.Cancelled ||
			!strings.Contains(string(b), fmt.Sprintf(`"cancelled":%d`, want.Cancelled)) {
			t.Errorf("%s: ops.Queues = %s; want %d cancelled", what, b, want.Cancelled)
		}
	}
	mustInsert(t, c, countArgs{N: 2}, &millrace.InsertOpts{Queue: "q"})
	cancel()
	cancel()
	counts("before a tally round", millrace.QueueCount{Queue: "q", Available: 1, Cancelled: 2})
	// A round of the leader's tally, as the leader takes every 10 s: the
	// two are counted in the tally from now on, a third since it.
	var tallied *int64
	if err := pool.QueryRow(ctx, "SELECT millrace.tally('0s')").Scan(&tallied); err != nil || tallied == nil || *tallied != 2 {
		t.Fatalf("tally round: %v rows counted, %v; want the 2 cancelled", tallied, err)
	}
	cancel()
	counts("after a tally round", millrace.QueueCount{Queue: "q", Available: 1, Cancelled: 3})
}
