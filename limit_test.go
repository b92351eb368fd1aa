package millrace_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace"
)

// TestLimitCapsRunningAcrossProcesses: four processes of ten workers each
// work one queue whose limit is 6. No more than 6 of its jobs ever run at
// once (counted by the jobs themselves), every job runs once, and each
// process's slots come back as its jobs finish: the queue drains.
func TestLimitCapsRunningAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const limit, jobs = 6, 300
	var running concurrency
	var mu sync.Mutex
	runs := map[int]int{}
	workers := timedWorkers(&running, func(a countArgs) {
		mu.Lock()
		runs[a.N]++
		mu.Unlock()
	})
	var clients []*millrace.Client
	for range 4 {
		c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
			Queues: map[string]millrace.QueueConfig{"limited": {MaxWorkers: 10, Limit: &millrace.Limit{Running: limit}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	params := make([]millrace.InsertManyParams, jobs)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}, Opts: &millrace.InsertOpts{Queue: "limited"}}
	}
	if _, err := clients[0].InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == jobs
	}
	waitFor(t, "every job to run", 60*time.Second, done)
	ls, err := millrace.Limits(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Queue != "limited" || ls[0].Limit.Running != limit {
		t.Fatalf("Limits = %+v; want the queue's limit of %d", ls, limit)
	}
	for _, c := range clients {
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if m := running.most.Load(); m > limit {
		t.Fatalf("%d jobs ran at once under a limit of %d", m, limit)
	} else {
		t.Logf("at most %d jobs ran at once (limit %d)", m, limit)
	}
	for i := range jobs {
		if runs[i] != 1 {
			t.Fatalf("job %d ran %d times; want 1", i, runs[i])
		}
	}
}

// TestLimitSlotsComeBackWhenAProcessIsKilled: a process holding a limited
// queue's every slot (of the queue's running limit, or of the key's
// per-key limit) is SIGKILLed. Until then another process takes nothing
// of it (under the running limit its claim records that it holds 0); once
// the killed one's lease runs out its slots are free, its jobs run again
// in the other, and no more than the limit ever run there at once. The
// jobs it had started used an attempt; those waiting in its buffer
// (claimed, not started) did not.
func TestLimitSlotsComeBackWhenAProcessIsKilled(t *testing.T) {
	for _, tc := range []struct {
		name, queue string
		limit       millrace.Limit
	}{
		{"running", "limq", millrace.Limit{Running: 3}},
		{"per-key", "limk", millrace.Limit{PerKey: 3}}, // every job is of kind count: one key
	} {
		t.Run(tc.name, func(t *testing.T) { testSlotsComeBack(t, tc.queue, tc.limit) })
	}
}

func testSlotsComeBack(t *testing.T, queue string, l millrace.Limit) {
	ctx := context.Background()
	pool := newDB(t)
	limit, jobs := max(l.Running, l.PerKey), 10
	if err := millrace.SetLimit(ctx, pool, queue, l); err != nil {
		t.Fatal(err)
	}
	producer, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		if _, err := producer.Insert(ctx, countArgs{N: i}, &millrace.InsertOpts{Queue: queue}); err != nil {
			t.Fatal(err)
		}
	}
	child := startWorkerProcess(t, pool, queue, limit, "MILLRACE_TEST_LEASE=1s")

	var running concurrency
	var mu sync.Mutex
	runs := map[int]int{}
	charged := 0 // jobs that came back with an attempt used
	var first time.Time
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		running.enter()
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // the job's work
		running.leave()
		mu.Lock()
		runs[j.Args.N]++
		if j.Attempt > 1 {
			charged++
		}
		mu.Unlock()
		return nil
	}))
	// The first process holds every slot and, in its buffer, the rest of
	// the jobs: claimed, not started.
	waitFor(t, "the first process to claim every job", 30*time.Second, func() bool {
		var n int
		pool.QueryRow(ctx, `SELECT coalesce(sum(t.njobs), 0) FROM millrace.tick t JOIN millrace.process p ON p.id = t.owner
			WHERE t.queue = $1 AND p.pid = $2`, queue, child.Process.Pid).Scan(&n)
		return n == jobs
	})
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(), MaintenanceEvery: 50 * time.Millisecond,
		Queues: map[string]millrace.QueueConfig{queue: {MaxWorkers: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	if l.Running > 0 {
		waitFor(t, "the second process's claim under the limit", 30*time.Second, func() bool {
			var n int
			pool.QueryRow(ctx, `SELECT count(*) FROM millrace.hold h JOIN millrace.process p ON p.id = h.owner
				WHERE h.queue = $1 AND h.n = 0 AND p.pid = $2`, queue, os.Getpid()).Scan(&n)
			return n > 0
		})
	} else {
		// Every job of the key is in the first process's batch: the
		// second one, up and claiming, finds nothing to take.
		waitFor(t, "the second process to register", 30*time.Second, func() bool {
			var n int
			pool.QueryRow(ctx, "SELECT count(*) FROM millrace.process WHERE pid = $1", os.Getpid()).Scan(&n)
			return n > 0
		})
	}
	mu.Lock()
	if len(runs) != 0 {
		t.Fatalf("the second process ran %d jobs while the first held every slot", len(runs))
	}
	mu.Unlock()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, "every job to run in the second process", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == jobs
	})
	mu.Lock()
	t.Logf("the first job ran %s after the kill, every job %s after (lease 1s)", first.Sub(killed).Round(time.Millisecond),
		time.Since(killed).Round(time.Millisecond))
	mu.Unlock()
	if m := running.most.Load(); m > int64(limit) {
		t.Fatalf("%d jobs ran at once under a limit of %d", m, limit)
	}
	// The jobs that started in the killed process used an attempt; those
	// that waited in its buffer did not.
	if charged != limit {
		t.Fatalf("%d jobs came back with an attempt used; want the %d that started in the killed process", charged, limit)
	}
}

// TestRateLimitAcrossProcesses: two processes of ten workers each work a
// queue limited to 20 starts per second. Counted from the jobs' own start
// times, no second holds more than 20 starts, and every job runs once.
func TestRateLimitAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const rate, jobs = 20, 30
	var mu sync.Mutex
	var starts []time.Time
	runs := map[int]int{}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		mu.Lock()
		starts = append(starts, time.Now())
		runs[j.Args.N]++
		mu.Unlock()
		return nil
	}))
	var clients []*millrace.Client
	for range 2 {
		c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
			Queues: map[string]millrace.QueueConfig{"rated": {MaxWorkers: 10, Limit: &millrace.Limit{Rate: rate, Per: time.Second}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(ctx)
		clients = append(clients, c)
	}
	params := make([]millrace.InsertManyParams, jobs)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}, Opts: &millrace.InsertOpts{Queue: "rated"}}
	}
	if _, err := clients[0].InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every job to run", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == jobs
	})
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, lo := 0, 0; i < len(starts); i++ {
		for starts[i].Sub(starts[lo]) >= time.Second {
			lo++
		}
		most = max(most, i-lo+1)
	}
	if most > rate {
		t.Fatalf("%d jobs started within one second under a limit of %d per second", most, rate)
	}
	t.Logf("at most %d starts in any second (limit %d)", most, rate)
	for i := range jobs {
		if runs[i] != 1 {
			t.Fatalf("job %d ran %d times; want 1", i, runs[i])
		}
	}
}

// TestLimitBufferStartsJobsWithoutAClaim: while a running limit binds, a
// claim takes jobs beyond the process's slots, which start as slots free
// without a claim each: 60 jobs under a limit of 2 take far fewer claims
// than the 30 that two jobs a claim would need, and never more than 2 run
// at once.
func TestLimitBufferStartsJobsWithoutAClaim(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const limit, jobs = 2, 60
	var running concurrency
	var ran atomic.Int64
	workers := timedWorkers(&running, func(countArgs) { ran.Add(1) })
	var claims atomic.Int64
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		OnClaim: func(string, time.Duration, int) { claims.Add(1) },
		Queues:  map[string]millrace.QueueConfig{"buffered": {MaxWorkers: 10, Limit: &millrace.Limit{Running: limit}}}})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]millrace.InsertManyParams, jobs)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}, Opts: &millrace.InsertOpts{Queue: "buffered"}}
	}
	if _, err := c.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every job to run", 60*time.Second, func() bool { return ran.Load() == jobs })
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if m := running.most.Load(); m > limit {
		t.Fatalf("%d jobs ran at once under a limit of %d", m, limit)
	}
	if n := claims.Load(); n > jobs/limit/2 {
		t.Fatalf("%d claims took the %d jobs; want at most %d with a buffer (2 a claim takes %d)", n, jobs, jobs/limit/2, jobs/limit)
	} else {
		t.Logf("%d claims took the %d jobs", n, jobs)
	}
}

// TestLimitRefusesBadValues: a limit out of range is refused with a clear
// error, by SetLimit and by NewClient, and changes nothing.
func TestLimitRefusesBadValues(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	for _, l := range []millrace.Limit{{Running: -1}, {Running: millrace.MaxLimit + 1}, {Rate: 10}, {Per: time.Second},
		{Rate: 10, Per: time.Millisecond}, {Rate: 10, Per: 25 * time.Hour}, {Rate: -1, Per: time.Second}} {
		if err := millrace.SetLimit(ctx, pool, "q", l); err == nil {
			t.Errorf("SetLimit(%+v) was accepted", l)
		}
		if _, err := millrace.NewClient(pool, millrace.Config{Workers: millrace.NewWorkers(),
			Queues: map[string]millrace.QueueConfig{"q": {MaxWorkers: 1, Limit: &l}}}); err == nil {
			t.Errorf("NewClient with Limit %+v was accepted", l)
		}
	}
	if ls, err := millrace.Limits(ctx, pool); err != nil || len(ls) != 0 {
		t.Fatalf("refused limits left %+v, %v", ls, err)
	}
}

// timedWorkers has one worker whose jobs take 2 ms (long enough for jobs
// to overlap), counted in running, and call ran when they end.
func timedWorkers(running *concurrency, ran func(countArgs)) *millrace.Workers {
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		running.enter()
		time.Sleep(2 * time.Millisecond)
		running.leave()
		ran(j.Args)
		return nil
	}))
	return workers
}

// concurrency counts the jobs running now (enter, leave) and the most
// that ever ran at once.
type concurrency struct{ now, most atomic.Int64 }

func (c *concurrency) enter() {
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
}

func (c *concurrency) leave() { c.now.Add(-1) }

// keyArgs is a job with a key field for per-key limits.
type keyArgs struct {
	N int `json:"n"`
	C int `json:"c"`
}

func (keyArgs) Kind() string { return "keyed" }

// TestPerKeyLimitAcrossProcesses: three processes work a queue with a
// per-key limit of 2 keyed by args.c. A backlog of one key, enqueued
// first, does not hold back the jobs of the other keys behind it: the
// backlog's jobs do not end until every other key's job has (a gate the
// last of those opens), so a claim path that served the other keys only
// after the backlog would never finish. No key ever runs more than 2 jobs
// at once (measured by the jobs themselves), and every job runs once.
// The backlog's jobs beyond the slots wait in the process that holds the
// key (up to eight per slot) or in the schedule. The test waits on the
// gate, not on the machine's pace: an earlier version compared how much
// of the backlog had run, and a loaded machine failed it.
func TestPerKeyLimitAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const perKey, backlog, others, keys = 2, 120, 120, 12
	var mu sync.Mutex
	running := map[int]*concurrency{}
	runs := map[int]int{}
	var backlogDone, othersDone, backlogAtOthersDone int
	othersEnded := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[keyArgs]) error {
		mu.Lock()
		c := running[j.Args.C]
		if c == nil {
			c = &concurrency{}
			running[j.Args.C] = c
		}
		mu.Unlock()
		c.enter()
		if j.Args.C == 0 {
			select {
			case <-othersEnded:
			case <-ctx.Done():
				c.leave()
				return ctx.Err()
			}
		}
		time.Sleep(2 * time.Millisecond)
		c.leave()
		mu.Lock()
		defer mu.Unlock()
		runs[j.Args.N]++
		if j.Args.C == 0 {
			backlogDone++
		} else if othersDone++; othersDone == others {
			backlogAtOthersDone = backlogDone
			close(othersEnded)
		}
		return nil
	}))
	clients := keyedClients(t, pool, workers, "keyed", &millrace.Limit{PerKey: perKey, Key: []string{"c"}})
	insertKeyed(t, clients[0], "keyed", backlog, others, keys)
	waitFor(t, "every job to run", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == backlog+others
	})
	ls, err := millrace.Limits(ctx, pool)
	if err != nil || len(ls) != 1 || ls[0].Limit.PerKey != perKey || fmt.Sprint(ls[0].Limit.Key) != "[args.c]" {
		t.Fatalf("Limits = %+v (%v); want the per-key limit of %d by args.c", ls, err, perKey)
	}
	for _, c := range clients {
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for k, c := range running {
		if m := c.most.Load(); m > perKey {
			t.Fatalf("key %d: %d jobs ran at once under a per-key limit of %d", k, m, perKey)
		}
	}
	for i := range backlog + others {
		if runs[i] != 1 {
			t.Fatalf("job %d ran %d times; want 1", i, runs[i])
		}
	}
	// The gate held every job of key 0 until the other keys were done.
	if backlogAtOthersDone != 0 {
		t.Fatalf("%d of key 0's jobs ended before the other keys' last one; the gate holds them all", backlogAtOthersDone)
	}
	if m := running[0].most.Load(); m != perKey {
		t.Fatalf("at most %d of key 0's jobs ran at once; want its %d slots used while the others ran", m, perKey)
	}
}

// TestPerKeyRateAcrossProcesses: three processes work a queue with a
// per-key rate of 20 starts per 300ms keyed by args.c. A backlog of one
// key, enqueued first, comes through at the rate, deferred to the
// schedule, while the other keys' jobs behind it run at once; every job
// runs once, and on the database's clock no window holds more of a key's
// claims than the rate.
func TestPerKeyRateAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const rate, backlog, others, keys = 20, 200, 60, 12
	var mu sync.Mutex
	runs := map[int]int{}
	var backlogDone, othersDone, backlogAtOthersDone int
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[keyArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.Args.N]++
		if j.Args.C == 0 {
			backlogDone++
		} else if othersDone++; othersDone == others {
			backlogAtOthersDone = backlogDone
		}
		return nil
	}))
	limit := &millrace.Limit{KeyRate: rate, KeyPer: 300 * time.Millisecond, Key: []string{"c"}}
	clients := keyedClients(t, pool, workers, "keyrated", limit)
	insertKeyed(t, clients[0], "keyrated", backlog, others, keys)
	waitFor(t, "every job to run", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == backlog+others
	})
	ls, err := millrace.Limits(ctx, pool)
	if err != nil || len(ls) != 1 || ls[0].Limit.KeyRate != rate || ls[0].Limit.KeyPer != 300*time.Millisecond || fmt.Sprint(ls[0].Limit.Key) != "[args.c]" {
		t.Fatalf("Limits = %+v (%v); want the per-key rate of %d per 300ms by args.c", ls, err, rate)
	}
	for _, c := range clients {
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range backlog + others {
		if runs[i] != 1 {
			t.Fatalf("job %d ran %d times; want 1", i, runs[i])
		}
	}
	// On the database's clock: no window of the key's claims holds more
	// than the rate (the window is the period and a tenth).
	var worst int
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(w), 0) FROM (SELECT (SELECT sum(y.took) FROM millrace.keyrate y
		WHERE y.queue = 'keyrated' AND y.key = x.key AND y.at >= x.at AND y.at < x.at + interval '330 milliseconds') AS w
		FROM millrace.keyrate x WHERE x.queue = 'keyrated' AND x.took > 0) z`).Scan(&worst); err != nil {
		t.Fatal(err)
	}
	if worst == 0 || worst > rate {
		t.Fatalf("the most claims of one key in a window of 330ms took %d jobs; want 1 to %d", worst, rate)
	}
	// Held back behind the backlog, the other keys would end after it
	// (200 of 200, ten windows); beside it, within its first windows.
	if backlogAtOthersDone >= backlog/2 {
		t.Fatalf("%d of key 0's %d jobs had run when the other keys' last job ended; want under half", backlogAtOthersDone, backlog)
	}
	t.Logf("key 0 had run %d of %d when the other keys were done; the most claimed of a key in a window: %d", backlogAtOthersDone, backlog, worst)
}

// keyedClients starts three clients of eight workers each on queue, with
// limit.
func keyedClients(t *testing.T, pool *pgxpool.Pool, workers *millrace.Workers, queue string, limit *millrace.Limit) []*millrace.Client {
	t.Helper()
	var clients []*millrace.Client
	for range 3 {
		c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
			Queues: map[string]millrace.QueueConfig{queue: {MaxWorkers: 8, Limit: limit}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	return clients
}

// insertKeyed inserts, in one InsertMany, a backlog of key 0 (jobs 0 to
// backlog-1) and then others jobs spread over keys 1 to keys.
func insertKeyed(t *testing.T, c *millrace.Client, queue string, backlog, others, keys int) {
	t.Helper()
	params := make([]millrace.InsertManyParams, 0, backlog+others)
	for i := range backlog + others {
		k := 0
		if i >= backlog {
			k = 1 + i%keys
		}
		params = append(params, millrace.InsertManyParams{Args: keyArgs{N: i, C: k}, Opts: &millrace.InsertOpts{Queue: queue}})
	}
	if _, err := c.InsertMany(context.Background(), params); err != nil {
		t.Fatal(err)
	}
}
