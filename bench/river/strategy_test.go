package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/bench/cli"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestDefaultWorkers: without --workers the river strategy runs River's own
// benchmark's worker count; --workers still sets it.
func TestDefaultWorkers(t *testing.T) {
	if got := (&bench.Config{}).WorkersFor("river"); got != cli.RiverWorkers {
		t.Errorf("river without --workers runs %d workers, want %d", got, cli.RiverWorkers)
	}
	if got := (&bench.Config{}).WorkersFor("skiplocked"); got != bench.DefaultWorkers {
		t.Errorf("skiplocked without --workers runs %d workers, want %d", got, bench.DefaultWorkers)
	}
	if got := (&bench.Config{Workers: 7}).WorkersFor("river"); got != 7 {
		t.Errorf("river with --workers 7 runs %d workers", got)
	}
}

// TestWorkRecordsFetchesAndPickups enqueues jobs one at a time and in
// batches, works them with River, and checks that every job ran once, that
// River's fetch statements were timed as claims covering every job, and
// that River's own pickup latency arrived for every job.
func TestWorkRecordsFetchesAndPickups(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	s := &strategy{}
	if err := s.Setup(ctx, url); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const single, batched = 5, 300
	var jobs []bench.Job
	for id := int64(1); id <= single+batched; id++ {
		jobs = append(jobs, bench.Job{ID: id, Payload: []byte(`{"x":1}`)})
	}
	for _, j := range jobs[:single] {
		if err := s.Enqueue(ctx, []bench.Job{j}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Enqueue(ctx, jobs[single:]); err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		runs      = map[int64]int{}
		claimed   int
		pickups   []time.Duration
		allRan    = make(chan struct{})
		closeOnce sync.Once
	)
	env := bench.Env{URL: url, Workers: 50, Processes: 1,
		Handle: func(ctx context.Context, j bench.Job) error {
			mu.Lock()
			defer mu.Unlock()
			runs[j.ID]++
			if len(runs) == len(jobs) {
				closeOnce.Do(func() { close(allRan) })
			}
			return nil
		},
		ObserveClaim: func(d time.Duration, n int) {
			mu.Lock()
			defer mu.Unlock()
			if d <= 0 || n <= 0 {
				t.Errorf("claim observed with duration %v and %d jobs", d, n)
			}
			claimed += n
		},
		ObservePickup: func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			pickups = append(pickups, d)
		},
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Work(wctx, env) }()
	select {
	case <-allRan:
	case err := <-done:
		t.Fatalf("Work returned before every job ran: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not every job ran within 60 s")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, j := range jobs {
		if runs[j.ID] != 1 {
			t.Errorf("job %d ran %d times", j.ID, runs[j.ID])
		}
	}
	if claimed != len(jobs) {
		t.Errorf("River's fetches locked %d jobs in all, want %d", claimed, len(jobs))
	}
	// Work stops the client (its completer flushes and its events are
	// delivered) before it unsubscribes, so every job's event has arrived.
	if len(pickups) != len(jobs) {
		t.Errorf("%d pickup latencies recorded, want %d", len(pickups), len(jobs))
	}
	for _, d := range pickups {
		if d < 0 || d > time.Minute {
			t.Errorf("pickup latency %v out of range", d)
			break
		}
	}
	left, err := s.Remaining(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d jobs still stored unfinished: %v", len(left), left)
	}
}
