package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// TestRunMix runs a short --mix with the river strategy through the bench
// (paced, then at full speed) and checks the bench's accounting: no job
// lost or run twice, every expected job completed (the failed attempts
// retried, the snoozed runs run again), the cancels honoured and the
// unique duplicates de-duplicated, no defect. Then River's own rows say
// that River did each: failed attempts retried at their second attempt
// with one error, snoozed jobs run again with the attempt not counted,
// cancelled jobs never attempted, no unique key stored twice.
func TestRunMix(t *testing.T) {
	mix, err := bench.ParseMix("fail=20,snooze=5,cancel=5,sched=20,unique=10")
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{200, 0} {
		t.Run(fmt.Sprintf("rate %v", rate), func(t *testing.T) {
			url := testkit.EmptyDBURL(t)
			cfg := bench.Config{URL: url, Strategies: []string{"river"}, Scenario: bench.ScenarioClean,
				Rate: rate, Workers: 50, Work: time.Millisecond, Mix: mix, MixSchedMax: 2 * time.Second,
				Clean: 4 * time.Second, Out: t.TempDir()}
			res, err := bench.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkMix(t, url, res)
		})
	}
}

// checkMix checks a --mix run of the river strategy: the bench's
// accounting (TestRunMix), then River's rows.
func checkMix(t *testing.T, url string, res *bench.Result) {
	t.Helper()
	ctx := context.Background()
	if d := res.MixDefects(); d != "" {
		t.Errorf("defects: %s", d)
	}
	ss := res.Summary.Strategies["river"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 || ss.EnqueueErrors != 0 {
		t.Errorf("lost %d, duplicated %d, enqueue errors %d", ss.LostJobs, ss.DuplicateJobs, ss.EnqueueErrors)
	}
	m := ss.Mix
	if m == nil || m.DrainPending != 0 || m.CancelMissed != 0 || m.UniqueNotDeduplicated != 0 || m.SchedEarly != 0 || len(m.PendingByKind) != 0 {
		t.Errorf("mix stats: %+v", m)
	}
	ps := ss.Phases[bench.PhaseClean]
	if ps == nil || ps.Cancelled == nil || ps.Deduplicated == nil || ps.RetryLateP99MS == nil || ps.SchedLateP99MS == nil {
		t.Fatalf("clean: mix fields missing: %+v", ps)
	}
	t.Logf("offered %d, cancelled %d, de-duplicated %d, completed %d; sched late p99 %.1f ms, retry late p99 %.1f ms, drain %.1f s",
		ps.Offered, *ps.Cancelled, *ps.Deduplicated, ps.Completed, *ps.SchedLateP99MS, *ps.RetryLateP99MS, m.DrainS)
	if ps.Offered < 500 || *ps.Cancelled == 0 || *ps.Deduplicated == 0 {
		t.Errorf("offered %d, cancelled %d, de-duplicated %d: want every kind", ps.Offered, *ps.Cancelled, *ps.Deduplicated)
	}
	if ps.Expected != ps.Offered-*ps.Cancelled-*ps.Deduplicated || ps.Completed != ps.Expected {
		t.Errorf("offered %d, cancelled %d, de-duplicated %d, expected %d, completed %d",
			ps.Offered, *ps.Cancelled, *ps.Deduplicated, ps.Expected, ps.Completed)
	}
	if *ps.RetryLateP99MS <= 0 {
		t.Errorf("retry late p99 %v ms: no retry or snooze ran again with its ReadyAt", *ps.RetryLateP99MS)
	}

	// River's rows, left for inspection.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var retried, badRetries, snoozed, badSnoozes, cancelled, badCancels, keys, distinct int64
	err = conn.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE jsonb_array_length(coalesce(to_jsonb(errors), '[]')) > 0),
		count(*) FILTER (WHERE jsonb_array_length(coalesce(to_jsonb(errors), '[]')) > 0 AND NOT (state = 'completed' AND attempt = 2 AND jsonb_array_length(to_jsonb(errors)) = 1)),
		count(*) FILTER (WHERE metadata ? 'snoozes'),
		count(*) FILTER (WHERE metadata ? 'snoozes' AND NOT (state = 'completed' AND attempt = 1 AND metadata->>'snoozes' = '1')),
		count(*) FILTER (WHERE state = 'cancelled'),
		count(*) FILTER (WHERE state = 'cancelled' AND attempt <> 0),
		count(*) FILTER (WHERE args ? 'u'),
		count(DISTINCT args->'u')
		FROM bench_river.river_job`).Scan(&retried, &badRetries, &snoozed, &badSnoozes, &cancelled, &badCancels, &keys, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("River's rows: %d retried, %d snoozed, %d cancelled, %d unique keys", retried, snoozed, cancelled, keys)
	if retried == 0 || badRetries != 0 || snoozed == 0 || badSnoozes != 0 {
		t.Errorf("%d jobs with errors (%d not completed at their second attempt), %d snoozed (%d not completed at their first attempt)",
			retried, badRetries, snoozed, badSnoozes)
	}
	// The bench counts a cancel in the phase its job was inserted in: at
	// full speed a few are inserted before the clean phase starts.
	var counted int64
	for _, p := range ss.Phases {
		if p.Cancelled != nil {
			counted += *p.Cancelled
		}
	}
	if cancelled != counted || badCancels != 0 {
		t.Errorf("%d jobs cancelled in River (%d attempted), the bench counted %d", cancelled, badCancels, counted)
	}
	if keys == 0 || keys != distinct {
		t.Errorf("%d jobs with a unique key, %d keys: a duplicate was stored", keys, distinct)
	}
}

// TestRunProcesses runs the river strategy as 4 River clients
// (--processes 4), each with a pool of its own: plain jobs at full speed,
// then the full mix paced. No job is lost or run twice, every process
// completed jobs, the counts per process add up to the jobs completed,
// and River's rows say that the 4 clients, by their IDs, attempted them;
// with the mix, the accounting and River's rows are as TestRunMix checks
// them in one process.
func TestRunProcesses(t *testing.T) {
	const procs = 4
	mix, err := bench.ParseMix("fail=20,snooze=5,cancel=5,sched=20,unique=10")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rate float64
		mix  bench.Mix
	}{{"plain", 0, bench.Mix{}}, {"mix", 300, mix}} {
		t.Run(tc.name, func(t *testing.T) {
			url := testkit.EmptyDBURL(t)
			cfg := bench.Config{URL: url, Strategies: []string{"river"}, Scenario: bench.ScenarioClean,
				Rate: tc.rate, Workers: 40, Processes: procs, Work: time.Millisecond, Mix: tc.mix, MixSchedMax: 2 * time.Second,
				Clean: 3 * time.Second, Out: t.TempDir()}
			res, err := bench.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			ss := res.Summary.Strategies["river"]
			if ss.LostJobs != 0 || ss.DuplicateJobs != 0 || ss.EnqueueErrors != 0 {
				t.Errorf("lost %d, duplicated %d, enqueue errors %d", ss.LostJobs, ss.DuplicateJobs, ss.EnqueueErrors)
			}
			per := ss.PerProcessCompleted
			t.Logf("completed per process: %v (of %d)", per, ss.Totals.Completed)
			if len(per) != procs {
				t.Fatalf("per_process_completed = %v, want %d counts", per, procs)
			}
			var sum int64
			for i, n := range per {
				sum += n
				if n == 0 {
					t.Errorf("process %d completed nothing: %v", i, per)
				}
			}
			if sum != ss.Totals.Completed || sum < 500 {
				t.Errorf("per_process_completed = %v, adds up to %d; completed %d", per, sum, ss.Totals.Completed)
			}
			if !tc.mix.Zero() {
				checkMix(t, url, res)
			}

			// Each client has an ID of its own: River's rows name the
			// 4 of them as the last attempt's client of completed jobs.
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			rows, err := conn.Query(context.Background(), `SELECT attempted_by[array_upper(attempted_by, 1)], count(*)
				FROM bench_river.river_job WHERE state = 'completed' GROUP BY 1 ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]int64{}
			for rows.Next() {
				var id string
				var n int64
				if err := rows.Scan(&id, &n); err != nil {
					t.Fatal(err)
				}
				by[id] = n
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			t.Logf("completed jobs by River client: %v", by)
			if len(by) != procs {
				t.Errorf("completed jobs were last attempted by %d River clients, want %d: %v", len(by), procs, by)
			}
			for i := range procs {
				found := false
				for id := range by {
					found = found || strings.HasSuffix(id, fmt.Sprintf("_p%d", i))
				}
				if !found {
					t.Errorf("no completed job was attempted by the client of process %d: %v", i, by)
				}
			}
		})
	}
}
