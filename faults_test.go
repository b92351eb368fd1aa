package millrace_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// cutter is a dial wrapper that loses a reply: once armed with a statement
// text, the first reply to a message carrying that text (and, if a marker
// is given, carrying the marker) is read up to and including its
// ReadyForQuery, so the server has committed, and then the connection is
// cut before the client sees any of it.
type cutter struct {
	mu     sync.Mutex
	match  []byte
	marker []byte // cut only a reply that carries these bytes
	cuts   atomic.Int64
}

func (c *cutter) arm(statement, marker string) {
	c.mu.Lock()
	c.match, c.marker = []byte(statement), []byte(marker)
	c.mu.Unlock()
}

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, c: c}, nil
}

type cutConn struct {
	net.Conn
	c        *cutter
	watching bool         // a matching message was written: watch its reply
	pending  bytes.Buffer // reply bytes held back while watching
}

func (cc *cutConn) Write(p []byte) (int, error) {
	cc.c.mu.Lock()
	if cc.c.match != nil && bytes.Contains(p, cc.c.match) {
		cc.watching = true
	}
	cc.c.mu.Unlock()
	return cc.Conn.Write(p)
}

func (cc *cutConn) Read(p []byte) (int, error) {
	if !cc.watching {
		return cc.Conn.Read(p)
	}
	// Hold the reply back until its ReadyForQuery.
	buf := make([]byte, 32<<10)
	for {
		if readyForQuery(cc.pending.Bytes()) {
			cc.watching = false
			cc.c.mu.Lock()
			cut := cc.c.match != nil && bytes.Contains(cc.pending.Bytes(), cc.c.marker)
			if cut {
				cc.c.match = nil
			}
			cc.c.mu.Unlock()
			if cut {
				cc.c.cuts.Add(1)
				cc.Conn.Close()
				cc.pending.Reset()
				return 0, errors.New("test: connection cut after the server committed")
			}
			return cc.pending.Read(p) // not this one: deliver it
		}
		n, err := cc.Conn.Read(buf)
		cc.pending.Write(buf[:n])
		if err != nil {
			return 0, err
		}
	}
}

// readyForQuery walks the backend messages in b and reports whether a
// ReadyForQuery has arrived.
func readyForQuery(b []byte) bool {
	for len(b) >= 5 {
		typ, n := b[0], int(binary.BigEndian.Uint32(b[1:5]))
		if len(b) < 1+n {
			return false
		}
		if typ == 'Z' {
			return true
		}
		b = b[1+n:]
	}
	return false
}

// cutPool is a pool on url whose connections go through c. Statements are
// sent with their text every time, so that c can recognize them.
func cutPool(t *testing.T, url string, c *cutter) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.DialFunc = c.dial
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestStallClaimReplyLost: a claim commits its batch but the reply never
// reaches the client. The claimer asks again with the same request id and
// runs the batch at once, instead of leaving it with a live owner that
// never got it.
func TestStallClaimReplyLost(t *testing.T) {
	ctx := context.Background()
	url := newDB(t).Config().ConnString()
	var cut cutter
	pool := cutPool(t, url, &cut)
	s := &seen{runs: map[int]int{}}
	c, err := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}}, StuckAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	// Cut the reply of the claim that returns this job, after it committed.
	cut.arm("millrace.claim", "lost-reply-marker")
	if _, err := c.Insert(ctx, countArgs{N: 1, Pad: "lost-reply-marker"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job of the claim whose reply was lost to run", 20*time.Second, func() bool { return s.n.Load() >= 1 },
		func() string { return fmt.Sprintf("%d replies cut", cut.cuts.Load()) })
	if cut.cuts.Load() != 1 {
		t.Fatalf("%d claim replies cut; want 1", cut.cuts.Load())
	}
	if s.runs[1] != 1 {
		t.Fatalf("job ran %d times", s.runs[1])
	}
}

// TestRotationFlushReplyLost: the flush that records a failed attempt
// commits but its reply is lost; the replay must not schedule the retry a
// second time (a forked retry chain would run attempt 2 twice).
func TestRotationFlushReplyLost(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	var cut cutter
	pool := cutPool(t, db.Config().ConnString(), &cut)
	var mu sync.Mutex
	attempts := map[int]int{}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		mu.Lock()
		attempts[j.Attempt]++
		mu.Unlock()
		if j.Attempt == 1 {
			cut.arm("millrace.flush", "") // the flush of this failure loses its reply
			return errors.New("first attempt fails")
		}
		return nil
	}))
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues:  map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}},
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, MaintenanceEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	ins, err := c.Insert(ctx, countArgs{N: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := ins.ID
	waitFor(t, "attempt 2 to complete", 20*time.Second, func() bool {
		j, err := millrace.JobByID(ctx, db, id)
		mu.Lock()
		defer mu.Unlock()
		return attempts[2] >= 1 && err == nil && j.State == millrace.JobCompleted
	})
	if cut.cuts.Load() != 1 {
		t.Fatalf("%d flush replies cut; want 1", cut.cuts.Load())
	}
	var retries int
	db.QueryRow(ctx, "SELECT count(*) FROM millrace.sched WHERE id = $1", id).Scan(&retries)
	if retries != 1 {
		t.Fatalf("%d retries scheduled for one failed attempt", retries)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts[1] != 1 || attempts[2] != 1 {
		t.Fatalf("attempts %v; want attempt 1 and attempt 2 once each", attempts)
	}
}

// TestLostAckWithUnstorableErrorText: a job that fails with NUL bytes and
// invalid UTF-8 in its error is retried, and the other acks flushed with
// it are kept.
func TestLostAckWithUnstorableErrorText(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	var mu sync.Mutex
	runs := map[int][]int{}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		mu.Lock()
		runs[j.Args.N] = append(runs[j.Args.N], j.Attempt)
		mu.Unlock()
		if j.Args.N == 0 && j.Attempt == 1 {
			return errors.New("nul \x00 and invalid \xff\xfe utf-8")
		}
		if j.Args.N == 1 && j.Attempt == 1 {
			panic("panic text with \x00 too")
		}
		return nil
	}))
	c, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues:  map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, MaintenanceEvery: 20 * time.Millisecond})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	params := make([]millrace.InsertManyParams, 50)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}}
	}
	if _, err := c.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every job to complete", 20*time.Second, func() bool {
		counts, err := millrace.QueueCounts(ctx, pool)
		mu.Lock()
		defer mu.Unlock()
		return err == nil && unfinished(counts) == 0 && len(runs[0]) == 2 && len(runs[1]) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 2; i < 50; i++ {
		if len(runs[i]) != 1 {
			t.Fatalf("job %d ran %d times", i, len(runs[i]))
		}
	}
}

// testWorker is the body of a worker process started by the tests below:
// it works one queue and records each job it starts in table started_job,
// then blocks in the job until it is killed.
func testWorker(url, queue string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		os.Exit(3)
	}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		pool.Exec(ctx, "INSERT INTO started_job (n, pid) VALUES ($1, $2)", j.Args.N, os.Getpid())
		select {}
	}))
	// MILLRACE_TEST_LEASE sets the process and leader leases (default:
	// the library's).
	lease, _ := time.ParseDuration(os.Getenv("MILLRACE_TEST_LEASE"))
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{queue: {MaxWorkers: 10}}, ProcessLease: lease, LeaderLease: lease})
	if err != nil {
		os.Exit(4)
	}
	if err := c.Start(ctx); err != nil {
		os.Exit(5)
	}
	select {}
}

// startWorkerProcess runs testWorker in a child process (with env added to
// its environment) and waits until it has started n jobs.
func startWorkerProcess(t *testing.T, pool *pgxpool.Pool, queue string, n int, env ...string) *exec.Cmd {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS started_job (n int, pid int)"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "MILLRACE_TEST_WORKER="+pool.Config().ConnString(), "MILLRACE_TEST_QUEUE="+queue), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(t, "the worker process to start its jobs", 30*time.Second, func() bool {
		var started int
		pool.QueryRow(ctx, "SELECT count(*) FROM started_job WHERE pid = $1", cmd.Process.Pid).Scan(&started)
		return started >= n
	})
	return cmd
}

// TestRescueToAnyClaimer: the batch of a killed process goes to a process
// that works its queue, not to the leader (which does not work it).
func TestRescueToAnyClaimer(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	// The leader works another queue only; it starts first, so it leads.
	leader, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(&seen{runs: map[int]int{}}, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"a": {MaxWorkers: 1}}, MaintenanceEvery: 20 * time.Millisecond})
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer leader.Stop(ctx)
	for i := 0; i < 5; i++ {
		leader.Insert(ctx, countArgs{N: i}, &millrace.InsertOpts{Queue: "b"})
	}
	victim := startWorkerProcess(t, pool, "b", 5, "MILLRACE_TEST_LEASE=2s")
	victim.Process.Kill()
	victim.Wait()
	s := &seen{runs: map[int]int{}}
	other, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"b": {MaxWorkers: 5}}})
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop(ctx)
	waitFor(t, "the killed process's jobs to run in the process that works their queue", 20*time.Second,
		func() bool { return s.n.Load() == 5 })
}

// TestStallStoppedProcess: a process stopped with SIGSTOP keeps its batch
// (it is alive: its connections hold), but rotation goes on, and after
// StuckAfter the batch is released to a working process.
func TestStallStoppedProcess(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	s := &seen{runs: map[int]int{}}
	var rotations atomic.Int64
	leader, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues:      map[string]millrace.QueueConfig{"a": {MaxWorkers: 2}},
		RotateAfter: 100 * time.Millisecond, MaintenanceEvery: 20 * time.Millisecond, StuckAfter: 3 * time.Second})
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer leader.Stop(ctx)
	for i := 0; i < 3; i++ {
		leader.Insert(ctx, countArgs{N: 1000 + i}, &millrace.InsertOpts{Queue: "b"})
	}
	stopped := startWorkerProcess(t, pool, "b", 3)
	if err := stopped.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	st0, _ := millrace.ReadStats(ctx, pool)
	// Traffic on queue a keeps flowing and the ring keeps turning.
	for i := 0; i < 200; i++ {
		leader.Insert(ctx, countArgs{N: i}, &millrace.InsertOpts{Queue: "a"})
	}
	waitFor(t, "queue a to be worked and the ring to turn", 20*time.Second, func() bool {
		st, _ := millrace.ReadStats(ctx, pool)
		rotations.Store(st.Reclaims - st0.Reclaims)
		return s.n.Load() >= 200 && st.Reclaims-st0.Reclaims >= 4
	})
	other, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"b": {MaxWorkers: 3}}})
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop(ctx)
	waitFor(t, "the stopped process's batch to be released and run", 30*time.Second, func() bool { return s.n.Load() >= 203 })
	for i := 1000; i < 1003; i++ {
		if s.runs[i] != 1 {
			for _, q := range []string{"SELECT slot, tick_id, owner, req, njobs, carried, more, at FROM millrace.tick WHERE queue = 'b' ORDER BY tick_id",
				"SELECT slot, tick_id, token, owner, at FROM millrace.lease ORDER BY token",
				"SELECT slot, job_id, tick_id, token, state FROM millrace.ack WHERE tick_id IN (SELECT tick_id FROM millrace.tick WHERE queue = 'b')",
				"SELECT slot, tick_id FROM millrace.done WHERE queue = 'b'"} {
				rows, _ := pool.Query(ctx, q)
				for rows.Next() {
					v, _ := rows.Values()
					t.Log(v...)
				}
				rows.Close()
			}
			t.Fatalf("job %d ran %d times here", i, s.runs[i])
		}
	}
}

// TestBatchSharedAcrossProcesses: one bulk insert is worked by every
// process of its queue, not by the first to claim it.
func TestBatchSharedAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	const n = 3000
	var per [3]atomic.Int64
	var total atomic.Int64
	for p := 0; p < 3; p++ {
		pool, err := pgxpool.New(ctx, testkit.WithDatabase(db.Config().ConnString(), db.Config().ConnConfig.Database))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		workers := millrace.NewWorkers()
		millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
			time.Sleep(time.Millisecond) // the job's work
			per[p].Add(1)
			total.Add(1)
			return nil
		}))
		c, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
			Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}}})
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(ctx)
	}
	producer, _ := millrace.NewClient(db, millrace.Config{Logger: quietLogger()})
	params := make([]millrace.InsertManyParams, n)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}}
	}
	if _, err := producer.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bulk insert to be worked", 60*time.Second, func() bool { return total.Load() >= n })
	for p := range per {
		if got := per[p].Load(); got < n/10 {
			t.Fatalf("process %d worked %d of %d jobs (%d, %d, %d): a bulk insert must be shared", p, got, n,
				per[0].Load(), per[1].Load(), per[2].Load())
		}
	}
}
