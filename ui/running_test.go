package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/ui"
)

// holdArgs are the arguments of a job that runs until the test releases it.
type holdArgs struct{}

func (holdArgs) Kind() string { return "hold" }

// runHeld starts a client with n workers of kind hold, which run until
// release is closed (or the test ends), inserts n such jobs on queue and
// waits until every one has started; it returns the first job's id.
func runHeld(t *testing.T, pool *pgxpool.Pool, queue string, n int, release <-chan struct{}) int64 {
	t.Helper()
	ctx := context.Background()
	started := make(chan struct{}, n)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[holdArgs]) error {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	client, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Queues: map[string]millrace.QueueConfig{queue: {MaxWorkers: n}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client.StopAndCancel(sctx)
	})
	var first int64
	for i := range n {
		ins, err := client.Insert(ctx, holdArgs{}, &millrace.InsertOpts{Queue: queue, MaxAttempts: 25})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ins.ID
		}
	}
	for range n {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the jobs did not start within 30 s")
		}
	}
	return first
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		<-tick.C
	}
}

// A running job shows the attempt it runs (1/25, not 0/25) and the process
// running it as host:pid; a finished attempt's run time has sub-second
// precision and its process is host:pid too.
func TestRunningJobShowsAttemptAndProcess(t *testing.T) {
	pool := testkit.DB(t)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer srv.Close()
	release := make(chan struct{})
	id := runHeld(t, pool, "held", 1, release)
	ctx := context.Background()
	// The worker runs it; the jobs view shows it running once its batch is
	// read.
	waitFor(t, "the job shown running", func() bool {
		d, err := ops.GetJob(ctx, pool, id)
		return err == nil && d.Live != nil && d.Live.State == "running"
	})
	host, _ := os.Hostname()
	proc := host + ":" + strconv.Itoa(os.Getpid())

	_, body := get(t, srv.URL+"/jobs?queue=held")
	if row := regexp.MustCompile(`(?s)<tr data-id="` + strconv.FormatInt(id, 10) + `" data-state="running">.*?</tr>`).FindString(body); !strings.Contains(row, "<td>1/25</td>") {
		t.Errorf("the jobs page shows the running job as:\n%s", row)
	}
	_, body = get(t, srv.URL+fmt.Sprintf("/jobs/%d", id))
	if !strings.Contains(body, "1 of 25") || !strings.Contains(body, proc) {
		t.Errorf("the job's page does not show attempt 1 of 25 worked by %s:\n%s", proc, body)
	}
	_, body = get(t, srv.URL+fmt.Sprintf("/api/jobs/%d", id))
	var d struct {
		Live struct {
			Attempt int    `json:"attempt"`
			Process string `json:"process"`
		} `json:"live"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.Live.Attempt != 1 || d.Live.Process != proc {
		t.Errorf("api/jobs/%d: %s", id, body)
	}

	close(release)
	waitFor(t, "the job's attempt in history", func() bool {
		d, err := ops.GetJob(ctx, pool, id)
		return err == nil && d.Live == nil && len(d.Attempts) == 1
	})
	_, body = get(t, srv.URL+fmt.Sprintf("/jobs/%d", id))
	row := regexp.MustCompile(`(?s)<tr data-state="completed">.*?</tr>`).FindString(body)
	if !regexp.MustCompile(`<td>\d+(\.\d+)? (ms|µs)</td>|<td>\d+\.\d{3} s</td>`).MatchString(row) || !strings.Contains(row, proc) {
		t.Errorf("the finished attempt's run time or process:\n%s", row)
	}
	// History keeps a completed job without its args: the page says so,
	// never a mask nor an empty block.
	if !strings.Contains(body, `<p id="args" class="muted">`+html.EscapeString(ops.ArgsNotKept)+`</p>`) {
		t.Errorf("the completed job's args are not said to be not kept:\n%s", body)
	}
}
