package millrace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// The tests of this file run client processes as children of the test
// binary (MILLRACE_LEASE_CHILD) and stop, kill and resume them: a stopped
// process is a dead one, the leader included (issue 20 items 1 and 2,
// issue 19 item 2).

type leaseArgs struct {
	N  int    `json:"n"`
	Do string `json:"do,omitempty"` // "hold": block forever; "crash": crash the process
}

func (leaseArgs) Kind() string { return "lrun" }

type leaseTick struct{}

func (leaseTick) Kind() string { return "ltick" }

// leaseRunTable records every run of a job of the children.
const leaseRunTable = `CREATE TABLE IF NOT EXISTS lease_run (n int, kind text, pid int, attempt int, created timestamptz,
	at timestamptz NOT NULL DEFAULT clock_timestamp())`

// leaseChild is the body of a child process (never returns). Its
// environment: MILLRACE_LEASE_QUEUES (comma-separated) and
// MILLRACE_LEASE_WORKERS (per queue, default 4) to work; MILLRACE_LEASE_BLOCK=1
// makes every lrun job block once recorded; MILLRACE_LEASE_PERIODIC=1 adds
// an @every 2s periodic job; MILLRACE_TEST_LEASE sets both leases. It logs
// at debug level to stderr and prints "LEAD true|false" on stdout when its
// leadership changes.
func leaseChild(url string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		os.Exit(3)
	}
	block := os.Getenv("MILLRACE_LEASE_BLOCK") == "1"
	record := func(n int, kind string, attempt int, created time.Time) {
		pool.Exec(context.Background(), "INSERT INTO lease_run (n, kind, pid, attempt, created) VALUES ($1, $2, $3, $4, $5)",
			n, kind, os.Getpid(), attempt, created)
	}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[leaseArgs]) error {
		record(j.Args.N, "lrun", j.Attempt, j.CreatedAt)
		switch {
		case j.Args.Do == "crash":
			go func() { panic("a poison job crashes its process") }()
			select {}
		case j.Args.Do == "hold" || block:
			select {}
		}
		return nil
	}))
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[leaseTick]) error {
		record(-1, "ltick", j.Attempt, j.CreatedAt)
		return nil
	}))
	n, _ := strconv.Atoi(os.Getenv("MILLRACE_LEASE_WORKERS"))
	if n == 0 {
		n = 4
	}
	queues := map[string]millrace.QueueConfig{}
	for _, q := range strings.Split(os.Getenv("MILLRACE_LEASE_QUEUES"), ",") {
		if q != "" {
			queues[q] = millrace.QueueConfig{MaxWorkers: n}
		}
	}
	lease, _ := time.ParseDuration(os.Getenv("MILLRACE_TEST_LEASE"))
	cfg := millrace.Config{Workers: workers, Queues: queues, ProcessLease: lease, LeaderLease: lease,
		Logger:           slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MaintenanceEvery: 200 * time.Millisecond, Backoff: func(int) time.Duration { return time.Second }}
	if os.Getenv("MILLRACE_LEASE_PERIODIC") == "1" {
		cfg.Periodic = []millrace.PeriodicJob{{Schedule: "@every 2s", Args: leaseTick{}, Opts: &millrace.InsertOpts{Queue: "lease"}}}
	}
	c, err := millrace.NewClient(pool, cfg)
	if err != nil {
		os.Exit(4)
	}
	if err := c.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(5)
	}
	fmt.Println("STARTED")
	// Print each change of leadership: Until polls it; the hour bounds one
	// wait only, and a wait that ends without a change starts again.
	lead := false
	for {
		var l bool
		if testkit.Until(time.Hour, func() bool { l = c.Leader(); return l != lead }) {
			lead = l
			fmt.Printf("LEAD %v\n", l)
		}
	}
}

// child is a running leaseChild process and what it printed.
type child struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    []line // stdout
	err    []line // stderr
	exited chan struct{}
}

type line struct {
	at   time.Time
	text string
}

// startChild runs leaseChild with env added and waits until it started.
func startChild(t *testing.T, pool *pgxpool.Pool, env ...string) *child {
	t.Helper()
	if _, err := pool.Exec(context.Background(), leaseRunTable); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "MILLRACE_LEASE_CHILD="+pool.Config().ConnString()), env...)
	c := &child{cmd: cmd, exited: make(chan struct{})}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, p := range []struct {
		r   io.Reader
		dst *[]line
	}{{stdout, &c.out}, {stderr, &c.err}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(p.r)
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			for sc.Scan() {
				c.mu.Lock()
				*p.dst = append(*p.dst, line{time.Now(), sc.Text()})
				c.mu.Unlock()
				if os.Getenv("MILLRACE_TEST_LOG") != "" {
					fmt.Fprintf(os.Stderr, "[%d] %s\n", cmd.Process.Pid, sc.Text())
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		<-c.exited
	})
	c.waitOut(t, "the child process to start", 30*time.Second, time.Time{}, "STARTED")
	return c
}

// pid is the child's operating system process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// has reports whether the child printed a line containing s on stdout
// (out) or stderr since since.
func (c *child) has(out bool, since time.Time, s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := c.err
	if out {
		lines = c.out
	}
	for _, l := range lines {
		if !l.at.Before(since) && strings.Contains(l.text, s) {
			return true
		}
	}
	return false
}

// stderrSince is what the child logged since since.
func (c *child) stderrSince(since time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.err {
		if !l.at.Before(since) {
			out = append(out, l.text)
		}
	}
	return out
}

// waitOut waits until the child printed s on stdout since since.
func (c *child) waitOut(t *testing.T, what string, d time.Duration, since time.Time, s string) {
	t.Helper()
	waitFor(t, what, d, func() bool { return c.has(true, since, s) }, func() string {
		return "child stderr tail: " + strings.Join(tail(c.stderrSince(time.Time{}), 20), "\n")
	})
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runsOf counts the recorded runs of job n by the processes pids (any
// process if none is given).
func runsOf(ctx context.Context, pool *pgxpool.Pool, n int, pids ...int) int {
	var c int
	if len(pids) == 0 {
		pool.QueryRow(ctx, "SELECT count(*) FROM lease_run WHERE kind = 'lrun' AND n = $1", n).Scan(&c)
	} else {
		pool.QueryRow(ctx, "SELECT count(*) FROM lease_run WHERE kind = 'lrun' AND n = $1 AND pid = ANY ($2)", n, pids).Scan(&c)
	}
	return c
}

// maintenanceDone are the log messages of maintenance a leader did.
var maintenanceDone = []string{"millrace: rotated", "millrace: reclaimed", "millrace: promoted scheduled jobs",
	"millrace: periodic job enqueued", "millrace: released a batch to other claimers", "millrace: history tallied",
	"millrace: history buckets truncated"}

// TestStoppedLeaderIsReplaced: three processes; the leader is stopped
// (SIGSTOP), a worker holding a batch is killed and another stopped. Within
// 15 s another process leads, promotes jobs scheduled 3 s ahead and runs a
// periodic @every 2s job; the batches of the killed and the stopped worker
// run again elsewhere within the process lease (15 s) and a round. When the
// old leader resumes, its term is over: it does no maintenance and steps
// down.
func TestStoppedLeaderIsReplaced(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	producer, _ := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	a := startChild(t, pool, "MILLRACE_LEASE_QUEUES=lease", "MILLRACE_LEASE_PERIODIC=1")
	a.waitOut(t, "the first process to lead", 30*time.Second, time.Time{}, "LEAD true")
	// Two workers, each holding a batch of jobs that block.
	d := startChild(t, pool, "MILLRACE_LEASE_QUEUES=d", "MILLRACE_LEASE_BLOCK=1")
	e := startChild(t, pool, "MILLRACE_LEASE_QUEUES=e", "MILLRACE_LEASE_BLOCK=1")
	for i := 0; i < 3; i++ {
		producer.Insert(ctx, leaseArgs{N: 100 + i}, &millrace.InsertOpts{Queue: "d"})
		producer.Insert(ctx, leaseArgs{N: 200 + i}, &millrace.InsertOpts{Queue: "e"})
	}
	waitFor(t, "the workers to start their jobs", 30*time.Second, func() bool {
		for i := 0; i < 3; i++ {
			if runsOf(ctx, pool, 100+i, d.pid()) == 0 || runsOf(ctx, pool, 200+i, e.pid()) == 0 {
				return false
			}
		}
		return true
	})
	b := startChild(t, pool, "MILLRACE_LEASE_QUEUES=lease,d,e", "MILLRACE_LEASE_PERIODIC=1")
	c := startChild(t, pool, "MILLRACE_LEASE_QUEUES=lease,d,e", "MILLRACE_LEASE_PERIODIC=1")

	a.cmd.Process.Signal(syscall.SIGSTOP)
	d.cmd.Process.Signal(syscall.SIGKILL)
	e.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	var dbStopped time.Time
	pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&dbStopped)
	for i := 0; i < 5; i++ {
		if _, err := producer.Insert(ctx, leaseArgs{N: 300 + i}, &millrace.InsertOpts{Queue: "lease", RunAt: time.Now().Add(3 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	within := func(d time.Duration) time.Duration { return time.Until(stopped.Add(d)) }
	waitFor(t, "another process to lead within 15 s of the leader's stop", within(15*time.Second), func() bool {
		return b.has(true, stopped, "LEAD true") || c.has(true, stopped, "LEAD true")
	})
	t.Logf("a new leader after %s", time.Since(stopped).Round(100*time.Millisecond))
	waitFor(t, "the scheduled jobs and a periodic job to run within 15 s of the leader's stop", within(15*time.Second), func() bool {
		for i := 0; i < 5; i++ {
			if runsOf(ctx, pool, 300+i) == 0 {
				return false
			}
		}
		var ticks int
		pool.QueryRow(ctx, "SELECT count(*) FROM lease_run WHERE kind = 'ltick' AND created > $1", dbStopped).Scan(&ticks)
		return ticks > 0
	})
	t.Logf("scheduled and periodic jobs ran %s after the stop", time.Since(stopped).Round(100*time.Millisecond))
	// Process lease 15 s, plus a maintenance round and the takeover.
	waitFor(t, "the killed and the stopped workers' jobs to run elsewhere", within(20*time.Second), func() bool {
		for i := 0; i < 3; i++ {
			if runsOf(ctx, pool, 100+i, b.pid(), c.pid()) == 0 || runsOf(ctx, pool, 200+i, b.pid(), c.pid()) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("the dead workers' jobs ran again %s after the stop", time.Since(stopped).Round(100*time.Millisecond))

	resumed := time.Now()
	a.cmd.Process.Signal(syscall.SIGCONT)
	e.cmd.Process.Signal(syscall.SIGCONT)
	a.waitOut(t, "the old leader to step down", 10*time.Second, resumed, "LEAD false")
	waitFor(t, "the old leader to say it stepped down", 5*time.Second, func() bool {
		return a.has(false, resumed, "no longer leads")
	})
	for _, l := range a.stderrSince(resumed) {
		for _, m := range maintenanceDone {
			if strings.Contains(l, `msg="`+m) {
				t.Errorf("the old leader did maintenance after it resumed: %s", l)
			}
		}
	}
	var holder int
	if err := pool.QueryRow(ctx, `SELECT p.pid FROM millrace.process p
		WHERE p.id = (SELECT holder FROM millrace.leader ORDER BY id DESC LIMIT 1)`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != b.pid() && holder != c.pid() {
		t.Errorf("the leader is process %d; want the one that took over (%d or %d)", holder, b.pid(), c.pid())
	}
	waitFor(t, "the resumed worker to see its lease ran out", 10*time.Second, func() bool {
		return e.has(false, resumed, "lease ran out")
	})
	for i := 0; i < 5; i++ {
		if n := runsOf(ctx, pool, 300+i); n != 1 {
			t.Errorf("scheduled job %d ran %d times", 300+i, n)
		}
	}
}

// TestPoisonJobUsesItsAttempts: a job whose handler crashes its process
// uses an attempt each time; after its last (MaxAttempts 3) it is
// discarded with an error that says so, and it ran exactly 3 times. The
// job claimed in the same batch, which had not started when the process
// died, runs once and is not charged.
func TestPoisonJobUsesItsAttempts(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	// The leader works no queue; it starts first, so it leads.
	leader, _ := millrace.NewClient(pool, millrace.Config{Logger: quietLogger(), MaintenanceEvery: 100 * time.Millisecond})
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer leader.Stop(ctx)
	env := []string{"MILLRACE_LEASE_QUEUES=poison", "MILLRACE_LEASE_WORKERS=2", "MILLRACE_TEST_LEASE=2s"}
	// A job that holds one worker, so that of the next batch only the
	// first job starts.
	if _, err := leader.Insert(ctx, leaseArgs{N: 1, Do: "hold"}, &millrace.InsertOpts{Queue: "poison"}); err != nil {
		t.Fatal(err)
	}
	ch := startChild(t, pool, env...)
	waitFor(t, "the holding job to start", 30*time.Second, func() bool { return runsOf(ctx, pool, 1) > 0 })
	// The poison job and its batch-mate, in one transaction: one batch.
	ins, err := leader.InsertMany(ctx, []millrace.InsertManyParams{
		{Args: leaseArgs{N: 2, Do: "crash"}, Opts: &millrace.InsertOpts{Queue: "poison", MaxAttempts: 3}},
		{Args: leaseArgs{N: 3}, Opts: &millrace.InsertOpts{Queue: "poison"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	poison := ins[0].ID
	discarded := func() bool {
		j, err := millrace.JobByID(ctx, pool, poison)
		return err == nil && j.State == millrace.JobDiscarded
	}
	// The supervisor: a process that crashed is started again.
	children := 1
	for !discarded() {
		select {
		case <-ch.exited:
			if children == 6 {
				t.Fatalf("the poison job crashed %d processes and is not discarded; runs: %d", children, runsOf(ctx, pool, 2))
			}
			ch = startChild(t, pool, env...)
			children++
		case <-time.After(50 * time.Millisecond):
		}
	}
	j, err := millrace.JobByID(ctx, pool, poison)
	if err != nil {
		t.Fatal(err)
	}
	last := j.Attempts[len(j.Attempts)-1]
	if want := "millrace: the process died while running the job (attempt 3 of 3)"; last.Error != want || last.Attempt != 3 {
		t.Errorf("last attempt %d: %q; want attempt 3: %q", last.Attempt, last.Error, want)
	}
	if n := runsOf(ctx, pool, 2); n != 3 {
		t.Errorf("the poison job ran %d times; want 3 (its max attempts)", n)
	}
	waitFor(t, "the batch-mate to complete", 20*time.Second, func() bool {
		j, err := millrace.JobByID(ctx, pool, ins[1].ID)
		return err == nil && j.State == millrace.JobCompleted
	})
	if n := runsOf(ctx, pool, 3); n != 1 {
		t.Errorf("the poison job's batch-mate ran %d times; want 1", n)
	}
	if mate, _ := millrace.JobByID(ctx, pool, ins[1].ID); len(mate.Attempts) != 1 || mate.Attempts[0].Attempt != 1 {
		t.Errorf("the batch-mate's attempts: %+v; want one, its first", mate.Attempts)
	}
	t.Logf("%d processes started, the last one alive", children)
}

// TestIdleSessionTimeoutRunsNoJobTwice: with idle_session_timeout = 1s on
// the role, the server closes every connection idle for a second, the
// notification connection among them. That is not a death: the process
// keeps its identity and its batches, and no job runs twice.
func TestIdleSessionTimeoutRunsNoJobTwice(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	if _, err := db.Exec(ctx, "ALTER ROLE CURRENT_USER IN DATABASE "+
		pgx.Identifier{db.Config().ConnConfig.Database}.Sanitize()+" SET idle_session_timeout = '1s'"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var setting string
	pool.QueryRow(ctx, "SHOW idle_session_timeout").Scan(&setting)
	if setting != "1s" {
		t.Fatalf("idle_session_timeout is %q", setting)
	}
	s := &seen{runs: map[int]int{}}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		s.add(j.Args.N)
		time.Sleep(2500 * time.Millisecond) // the job's work, long enough for the session to sit idle
		return nil
	}))
	client, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)
	const n = 6
	for i := 0; i < n; i++ {
		if _, err := client.Insert(ctx, countArgs{N: i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every job to complete", 60*time.Second, func() bool {
		counts, err := millrace.QueueCounts(ctx, pool)
		return err == nil && unfinished(counts) == 0 && s.n.Load() >= n
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		if s.runs[i] != 1 {
			t.Errorf("job %d ran %d times", i, s.runs[i])
		}
	}
}

// TestKilledLeaderIsReplacedAtOnce: a leader whose process is killed
// closes its connections with it; another process takes over once the
// term has gone 2 s without renewal, not when it would have run out (the
// default leader lease, 10 s), so that promotions and releases stop only
// briefly. A stopped leader keeps its connections and its term runs out
// (TestStoppedLeaderIsReplaced).
func TestKilledLeaderIsReplacedAtOnce(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	a := startChild(t, pool, "MILLRACE_LEASE_QUEUES=lease")
	a.waitOut(t, "the first process to lead", 30*time.Second, time.Time{}, "LEAD true")
	b := startChild(t, pool, "MILLRACE_LEASE_QUEUES=lease")
	var term int64
	var until time.Time
	if err := pool.QueryRow(ctx, "SELECT term, until FROM millrace.leader ORDER BY id DESC LIMIT 1").Scan(&term, &until); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	a.cmd.Process.Signal(syscall.SIGKILL)
	b.waitOut(t, "the other process to lead", 30*time.Second, killed, "LEAD true")
	// The new term began before the killed leader's newest would have run
	// out (read after the kill: its last renewal).
	var lastUntil, began time.Time
	if err := pool.QueryRow(ctx, `SELECT (SELECT max(until) FROM millrace.leader WHERE term = $1),
		(SELECT min(at) FROM millrace.leader WHERE term > $1)`, term).Scan(&lastUntil, &began); err != nil {
		t.Fatal(err)
	}
	if !began.Before(lastUntil) {
		t.Errorf("the new term began at %s, after the killed leader's ran out (%s): the takeover waited for the lease", began, lastUntil)
	}
	t.Logf("a new leader %s after the kill; the killed leader's term would have run %s more",
		time.Since(killed).Round(100*time.Millisecond), lastUntil.Sub(began).Round(100*time.Millisecond))
}
