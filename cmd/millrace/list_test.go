package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	mr "github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
)

type flakyArgs struct{}

func (flakyArgs) Kind() string { return "flaky" }

// failThrice runs one job that fails each of its 3 attempts, with no
// backoff, and waits until history has all three; it returns its id.
func failThrice(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	ctx := context.Background()
	workers := mr.NewWorkers()
	mr.AddWorker(workers, mr.WorkFunc(func(ctx context.Context, j *mr.Job[flakyArgs]) error { return errors.New("flaky") }))
	client, err := mr.NewClient(pool, mr.Config{
		Workers: workers, Queues: map[string]mr.QueueConfig{"flaky": {MaxWorkers: 1}},
		Backoff: func(int) time.Duration { return 0 },
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ins, err := client.Insert(ctx, flakyArgs{}, &mr.InsertOpts{Queue: "flaky", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "three attempts in history", 30*time.Second, func() bool {
		var n int
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", ins.ID).Scan(&n)
		return n == 3
	})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client.Stop(sctx)
	return ins.ID
}

// jobs list has one row per job (its latest state), not one per attempt;
// a list cut at --limit says on stderr that more match and how to see
// them; a --limit out of 1..1000 is a one-line error. Before, a job with
// three attempts had three rows, the list was cut at 100 silently, and
// --limit -1, 0 and 5000 meant 100, 100 and 1000.
func TestJobsListOneRowPerJob(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	f := failThrice(t, pool)
	for i := 0; i < 3; i++ {
		testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	}
	code, out, errs := millrace(t, "jobs", "list", "--json", "--database-url", u)
	var jobs []ops.Job
	if code != 0 || json.Unmarshal([]byte(out), &jobs) != nil {
		t.Fatalf("jobs list --json: exit %d %s %s", code, out, errs)
	}
	rows := map[int64]int{}
	for _, j := range jobs {
		rows[j.ID]++
	}
	if len(jobs) != 4 || rows[f] != 1 {
		t.Errorf("jobs list --json: %d rows, %d for job %d: want 4 rows, one per job", len(jobs), rows[f], f)
	}
	for _, j := range jobs {
		if j.ID == f && (j.State != "discarded" || j.Attempt != 3) {
			t.Errorf("job %d: state %s attempt %d, want its latest: discarded, attempt 3", f, j.State, j.Attempt)
		}
	}
	if errs != "" {
		t.Errorf("a whole list says more match: %q", errs)
	}

	// Cut at --limit: the rows shown, and one line on stderr.
	code, out, errs = millrace(t, "jobs", "list", "--limit", "2", "--database-url", u)
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); code != 0 || n != 3 {
		t.Errorf("jobs list --limit 2: exit %d, %d lines:\n%s", code, n, out)
	}
	oneLineErr(t, errs, "more jobs match than the 2 shown")
	oneLineErr(t, errs, "raise --limit (at most 1000)")
	code, out, errs = millrace(t, "jobs", "list", "--limit", "4", "--database-url", u)
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); code != 0 || n != 5 || errs != "" {
		t.Errorf("jobs list --limit 4 (all of them): exit %d, %d lines, stderr %q", code, n, errs)
	}

	for _, l := range []string{"-1", "0", "1001", "5000"} {
		code, out, errs := millrace(t, "jobs", "list", "--limit", l, "--database-url", u)
		if code != 1 || out != "" {
			t.Errorf("--limit %s: exit %d, stdout %q: want a refusal", l, code, out)
		}
		oneLineErr(t, errs, fmt.Sprintf("--limit %s: want 1 to 1000", l))
	}
}
