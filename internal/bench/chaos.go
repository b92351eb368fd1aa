package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ChaosPoisonAttempts is the max attempts of the chaos scenario's poison
// jobs: each must run at most that many times, then be discarded.
const ChaosPoisonAttempts = 3

// AppChaos is the application name of the chaos scenario's own sessions
// (the held transaction, the fault statements).
const AppChaos = "millrace-bench-chaos"

// chaosChildEnv marks a process started as a chaos worker process: its
// value is the childConfig, as JSON.
const chaosChildEnv = "MILLRACE_BENCH_CHAOS_CHILD"

// Defaults of the chaos scenario's faults.
const (
	chaosHold      = 30 * time.Second // how long the open transaction stays open
	chaosPoison    = 2                // poison jobs
	chaosRespawn   = time.Second      // a supervisor restarts a dead worker process after
	chaosCrashSpan = 10 * time.Second // runs started this long before a process fault may be cut by it
	chaosStranded  = 60 * time.Second // stranded: not finished this long after the stress (or at the end of recovery)
	chaosStopExtra = 2 * time.Second  // a stop lasts the longer lease plus this
)

// Default leases of the millrace client (Config.ProcessLease and
// LeaderLease), which the stop must outlast when ChaosOptions leaves
// them zero.
const (
	defaultProcessLease = 15 * time.Second
	defaultLeaderLease  = 10 * time.Second
)

// ChaosOptions tunes the chaos scenario; the zero value is the scenario as
// `millrace bench --scenario chaos` runs it. Tests compress it.
type ChaosOptions struct {
	// Leases are the worker processes' process and leader leases (zero:
	// the client's defaults, 15 s and 10 s).
	Leases Leases
	// Hold is how long the transaction that enqueues a unique job stays
	// open (default 30 s, at most a fifth of the stress phase).
	Hold time.Duration
	// Stop is how long the leader stays stopped (default: the longer
	// lease plus 2 s, so that it loses leadership and its identity).
	Stop time.Duration
	// Poison is the number of poison jobs (default 2).
	Poison int
}

// ChaosStats is what the chaos scenario did and saw (summary.json).
type ChaosStats struct {
	// Faults lists the faults in the order they began.
	Faults []ChaosFault `json:"faults"`
	// Lost counts jobs enqueued (committed) that never finished and are no
	// longer stored (for a poison job: that never ran).
	Lost int64 `json:"lost"`
	// Duplicated counts jobs run again although their previous run was in
	// no crash window; CrashDuplicated those whose previous run started in
	// a process shortly before (chaosCrashSpan) it was killed, stopped or
	// crashed: allowed (at-least-once), counted apart.
	Duplicated      int64 `json:"duplicated"`
	CrashDuplicated int64 `json:"crash_duplicated"`
	// Stranded counts jobs enqueued and due before the stress phase ended
	// that had not finished StrandedAfterS after it (60 s, or the end of
	// the recovery phase when that is shorter).
	Stranded       int64   `json:"stranded"`
	StrandedAfterS float64 `json:"stranded_after_s"`
	// Poison are the poison jobs; PoisonMaxRuns the most runs of any.
	Poison        []ChaosPoison `json:"poison"`
	PoisonMaxRuns int64         `json:"poison_max_runs"`
	// OpenTx is the transaction that enqueued a unique job and stayed
	// open.
	OpenTx *ChaosOpenTx `json:"open_tx,omitempty"`
	// Restart says what became of the Postgres restart: "restarted" or
	// why it was skipped.
	Restart string `json:"restart"`
	// Exits counts worker process exits the bench did not cause (crashes);
	// Spawned the worker processes started, respawns included.
	Exits   int64 `json:"exits"`
	Spawned int64 `json:"spawned"`
	// StorageMaxBytes is the most the queue stored (history aside) during
	// the stress and recovery phases; CleanStorageMaxBytes the same in the
	// clean phase.
	StorageMaxBytes      int64 `json:"storage_max_bytes"`
	CleanStorageMaxBytes int64 `json:"clean_storage_max_bytes,omitempty"`
	// RecoverMaxS is the longest of the faults' RecoverS (-1 if one never
	// recovered).
	RecoverMaxS float64 `json:"recover_max_s"`
	// Notes describe the first duplicates outside a crash window and the
	// first stranded jobs.
	Notes []string `json:"notes,omitempty"`
}

// ChaosFault is one fault of the chaos scenario.
type ChaosFault struct {
	// Kind is kill, stop, crash (a process that exited on its own: a
	// poison job), terminate, restart, poison (the poison jobs enqueued)
	// or open-tx.
	Kind string `json:"kind"`
	// Target names what it hit (a worker process, the server, ...).
	Target string `json:"target,omitempty"`
	// AtS is when it began, in seconds since the strategy's run started
	// (the samples' t); DurationS how long it lasted (a stop, a restart,
	// the open transaction).
	AtS       float64 `json:"at_s"`
	DurationS float64 `json:"duration_s,omitempty"`
	// RecoverS is how long after AtS the backlog was back within one
	// second of the offered rate of where it was when the fault began (-1:
	// not by the end of the run).
	// Only the faults that take capacity away have one: kill, stop,
	// crash, terminate and restart.
	RecoverS *float64 `json:"recover_s,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// ChaosPoison is one poison job and what became of it.
type ChaosPoison struct {
	ID        int64  `json:"id"`
	Runs      int64  `json:"runs"`
	State     string `json:"state"`
	Discarded bool   `json:"discarded"`
}

// ChaosOpenTx is the open transaction's figures.
type ChaosOpenTx struct {
	HeldS     float64 `json:"held_s"`
	Committed bool    `json:"committed"`
	Ran       bool    `json:"ran"`
}

// childConfig is what a chaos worker process is told.
type childConfig struct {
	Strategy   string        `json:"strategy"`
	URL        string        `json:"url"`
	SessionURL string        `json:"session_url,omitempty"`
	Workers    int           `json:"workers"`
	Proc       int           `json:"proc"`
	Work       time.Duration `json:"work"`
	Backoff    time.Duration `json:"backoff"`
	Leases     Leases        `json:"leases"`
}

// ChildMain runs this process as a chaos worker process when the bench
// started it as one, and exits; otherwise it returns at once. Every
// binary that runs `millrace bench` calls it first (the bench starts its
// own executable); so does a test binary's TestMain whose tests run the
// chaos scenario.
func ChildMain() {
	v := os.Getenv(chaosChildEnv)
	if v == "" {
		return
	}
	if err := runChild(v, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaos worker process:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runChild is a chaos worker process: one client of the strategy's, whose
// handler asks the bench (on out, answered on in) how many times each job
// has started and what kind it is, then works it. It stops gracefully
// when in closes.
func runChild(config string, in io.Reader, out io.Writer) error {
	var cc childConfig
	if err := json.Unmarshal([]byte(config), &cc); err != nil {
		return err
	}
	f, err := Lookup(cc.Strategy)
	if err != nil {
		return err
	}
	s := f()
	ch, ok := s.(Chaoser)
	if !ok {
		return fmt.Errorf("strategy %q cannot run the chaos scenario", cc.Strategy)
	}
	if ps, ok := s.(PoolerAware); ok && cc.SessionURL != "" {
		ps.SetSessionURL(cc.SessionURL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := bufio.NewWriter(out)
	var outMu sync.Mutex
	send := func(format string, a ...any) {
		outMu.Lock()
		fmt.Fprintf(w, format+"\n", a...)
		w.Flush()
		outMu.Unlock()
	}
	var (
		seq     atomic.Int64
		mu      sync.Mutex
		waiting = map[int64]chan [2]int64{}
		gone    = make(chan struct{})
	)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				continue
			}
			k, _ := strconv.ParseInt(f[0], 10, 64)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			kind, _ := strconv.ParseInt(f[2], 10, 64)
			mu.Lock()
			c := waiting[k]
			delete(waiting, k)
			mu.Unlock()
			if c != nil {
				c <- [2]int64{n, kind}
			}
		}
		close(gone)
		cancel() // the bench is done, or gone: stop gracefully
	}()
	errGone := errors.New("the bench is gone")
	handle := func(hctx context.Context, j Job) error {
		k := seq.Add(1)
		c := make(chan [2]int64, 1)
		mu.Lock()
		waiting[k] = c
		mu.Unlock()
		var ready int64
		if !j.ReadyAt.IsZero() {
			ready = j.ReadyAt.UnixNano()
		}
		send("S %d %d %d", k, j.ID, ready)
		var r [2]int64
		select {
		case r = <-c:
		case <-gone:
			return errGone
		case <-hctx.Done():
			return hctx.Err()
		}
		n, kind := uint32(r[0]), mixKind(r[1])
		if kind == kindPoison {
			// A crash no handler can recover: a goroutine's panic.
			go func() { panic(fmt.Sprintf("bench: poison job %d crashes its process (chaos scenario)", j.ID)) }()
			select {}
		}
		if err := mixWork(n, kind, cc.Work); err != nil {
			return err
		}
		send("F %d", j.ID)
		return nil
	}
	env := Env{URL: cc.URL, Workers: cc.Workers, Processes: 1, Handle: handle, RetryBackoff: cc.Backoff,
		ObserveClaim: func(d time.Duration, n int) { send("C %d %d", int64(d), n) }}
	leases := cc.Leases
	leases.Lost = func() { send("X") }
	return ch.WorkProcess(ctx, env, cc.Proc, leases, func(l bool) {
		if l {
			send("L 1")
		} else {
			send("L 0")
		}
	})
}

// mixWork is the bench's job, run for the n-th time: a job of the mix's
// snooze share snoozes its first run, the work takes d, and a job of its
// fail share fails its first attempt. nil means the run finished.
func mixWork(n uint32, kind mixKind, d time.Duration) error {
	if kind == kindSnooze && n == 1 {
		return &SnoozeError{Delay: MixSnooze}
	}
	if d > 0 {
		time.Sleep(d)
	}
	if kind == kindFail && n == 1 {
		return ErrMixFail
	}
	return nil
}

// chaos is the chaos scenario: the strategy's workers as operating-system
// processes under a supervisor that restarts them, and the faults of the
// stress phase.
type chaos struct {
	cfg   *Config
	name  string
	s     Chaoser
	t     *tracker
	url   string    // the bench's direct URL (faults, the open transaction)
	begun time.Time // the strategy's run started
	opts  ChaosOptions

	slots []*slot
	log   *os.File // the worker processes' stderr

	mu       sync.Mutex
	stats    ChaosStats
	poison   []poisonJob
	openTxID int64 // the open transaction's job, once it committed

	stopFaults context.CancelFunc
	faultsDone chan struct{}
	stressEnd  time.Time
	stranded   chan struct{} // closed once Stranded is measured
	// strandedAfter is the stranded check's window (set by release, read
	// under mu): a job unfinished that long after it could run is stranded.
	strandedAfter time.Duration
	strandOnce    sync.Once
}

type poisonJob struct{ id, ref int64 }

// slot is one worker process and its successors: the supervisor starts it
// again after it dies.
type slot struct {
	idx     int
	workers int

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	inMu    sync.Mutex
	leader  bool
	alive   bool // started, and its exit not yet seen by the supervisor
	killed  bool // the bench signalled this process: its exit is no crash
	exited  chan struct{}
	stopped bool // SIGSTOPped now
}

func newChaos(cfg *Config, name string, s Chaoser, t *tracker, start time.Time) *chaos {
	o := cfg.Chaos
	if o.Poison <= 0 {
		o.Poison = chaosPoison
	}
	if o.Hold <= 0 {
		o.Hold = chaosHold
	}
	if cfg.Stress > 0 {
		o.Hold = min(o.Hold, cfg.Stress/5)
	}
	if o.Stop <= 0 {
		o.Stop = max(cmpOr(o.Leases.Process, defaultProcessLease), cmpOr(o.Leases.Leader, defaultLeaderLease)) + chaosStopExtra
	}
	t.crash = &crashLog{}
	c := &chaos{cfg: cfg, name: name, s: s, t: t, url: cfg.URL, begun: start, opts: o, stranded: make(chan struct{})}
	c.stats.Restart = "restarted"
	if cfg.Restart == nil {
		c.stats.Restart = "skipped: the bench runs on --database-url, not on a cluster of its own it may restart"
	}
	return c
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// since is d since the strategy's run started.
func (c *chaos) since() time.Duration { return time.Since(c.begun) }

// makeSlots splits env.Workers workers between env.Processes worker
// processes; the run calls it before work and the stress phase.
func (c *chaos) makeSlots(env Env) {
	n := max(env.Processes, 1)
	for i := range n {
		workers := env.Workers / n
		if i < env.Workers%n {
			workers++
		}
		c.slots = append(c.slots, &slot{idx: i, workers: workers})
	}
}

// work runs env.Workers workers as Env.Processes worker processes until
// ctx is cancelled, restarting each that dies a second later; then it
// stops them gracefully (their stdin closes), killing those that do not
// stop within two minutes.
func (c *chaos) work(ctx context.Context, env Env) error {
	n := len(c.slots)
	f, err := os.Create(filepath.Join(c.cfg.Out, "chaos-processes.log"))
	if err != nil {
		return err
	}
	c.log = f
	defer f.Close()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	started := make(chan error, n)
	for _, sl := range c.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for {
				err := c.spawn(sl, env)
				if first {
					started <- err
					first = false
				}
				if err != nil {
					errs <- err
					return
				}
				select {
				case <-sl.exited:
				case <-ctx.Done():
					c.shutdown(sl)
					return
				}
				sl.mu.Lock()
				killed := sl.killed
				sl.killed, sl.leader, sl.stopped, sl.alive = false, false, false, false
				state := sl.cmd.ProcessState
				sl.mu.Unlock()
				if !killed && ctx.Err() == nil {
					// It died by itself: a job crashed it (a poison job).
					now := c.since()
					c.t.crash.add(sl.idx, now-chaosCrashSpan, now)
					c.mu.Lock()
					c.stats.Exits++
					c.stats.Faults = append(c.stats.Faults, ChaosFault{Kind: "crash", Target: fmt.Sprintf("worker process %d", sl.idx),
						AtS: round(now.Seconds()), Note: fmt.Sprint(state)})
					c.mu.Unlock()
				}
				if !sleepCtx(ctx, chaosRespawn) {
					return
				}
			}
		}()
	}
	for range c.slots {
		if err := <-started; err != nil {
			break
		}
	}
	<-ctx.Done()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// spawn starts sl's next process and the goroutine that reads what it
// says.
func (c *chaos) spawn(sl *slot, env Env) error {
	cc := childConfig{Strategy: c.name, URL: env.URL, Workers: sl.workers, Proc: sl.idx, Work: c.cfg.Work, Backoff: env.RetryBackoff, Leases: c.opts.Leases}
	if c.cfg.PoolerURL != "" {
		cc.SessionURL = c.cfg.URL
	}
	b, _ := json.Marshal(cc)
	argv := c.cfg.ChildCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("chaos: the bench's executable: %w", err)
		}
		argv = []string{exe, "bench"}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), chaosChildEnv+"="+string(b))
	// Its own process group (a Ctrl-C in the terminal is the bench's to
	// handle), and it dies with the bench.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = c.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: starting a worker process: %w", err)
	}
	exited := make(chan struct{})
	sl.mu.Lock()
	sl.cmd, sl.stdin, sl.exited, sl.alive = cmd, stdin, exited, true
	sl.mu.Unlock()
	c.mu.Lock()
	c.stats.Spawned++
	c.mu.Unlock()
	go func() {
		c.read(sl, stdin, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

// read handles what one worker process says until it exits.
func (c *chaos) read(sl *slot, stdin io.Writer, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "S" && len(f) == 4:
			k, _ := strconv.ParseInt(f[1], 10, 64)
			id, _ := strconv.ParseInt(f[2], 10, 64)
			ns, _ := strconv.ParseInt(f[3], 10, 64)
			var ready time.Time
			if ns > 0 {
				ready = time.Unix(0, ns)
			}
			n, kind := c.t.startedIn(id, ready, sl.idx)
			sl.inMu.Lock()
			_, _ = fmt.Fprintf(stdin, "%d %d %d\n", k, n, kind)
			sl.inMu.Unlock()
		case f[0] == "F" && len(f) == 2:
			id, _ := strconv.ParseInt(f[1], 10, 64)
			c.t.finished(id, sl.idx)
		case f[0] == "C" && len(f) == 3:
			d, _ := strconv.ParseInt(f[1], 10, 64)
			c.t.claim.observe(0, time.Duration(d))
		case f[0] == "X":
			// The process's lease ran out (stopped, or cut off by a
			// restart or a network fault, for longer than it): what it
			// ran since its last renewal may run again elsewhere.
			now := c.since()
			c.t.crash.add(sl.idx, now-cmpOr(c.opts.Leases.Process, defaultProcessLease)-chaosCrashSpan, now+time.Second)
		case f[0] == "L" && len(f) == 2:
			sl.mu.Lock()
			sl.leader = f[1] == "1"
			sl.mu.Unlock()
		}
	}
}

// shutdown stops sl's process gracefully: it is resumed if stopped, its
// stdin closed; it is killed if it has not exited two minutes later.
func (c *chaos) shutdown(sl *slot) {
	sl.mu.Lock()
	cmd, stdin, exited := sl.cmd, sl.stdin, sl.exited
	sl.killed = true
	sl.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	sl.inMu.Lock()
	_ = stdin.Close()
	sl.inMu.Unlock()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// signal sends sig to sl's current process, marking it as the bench's
// doing; it returns the process id (0 if there is none).
func (sl *slot) signal(sig syscall.Signal) int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if !sl.alive {
		return 0
	}
	if sig == syscall.SIGKILL {
		sl.killed = true
	}
	if sl.cmd.Process.Signal(sig) != nil {
		return 0
	}
	sl.stopped = sig == syscall.SIGSTOP
	return sl.cmd.Process.Pid
}

// pick returns the leader's slot (leader true) or a slot that does not
// lead, and whether it is what was asked for.
func (c *chaos) pick(leader bool) (*slot, bool) {
	for _, sl := range c.slots {
		sl.mu.Lock()
		l, alive := sl.leader, sl.alive && !sl.stopped
		sl.mu.Unlock()
		if alive && l == leader {
			return sl, true
		}
	}
	return c.slots[0], false
}

func (c *chaos) fault(f ChaosFault) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Faults = append(c.stats.Faults, f)
	return len(c.stats.Faults) - 1
}

func (c *chaos) update(i int, do func(f *ChaosFault)) {
	c.mu.Lock()
	do(&c.stats.Faults[i])
	c.mu.Unlock()
}

// start begins the stress phase's faults; they run on their own schedule.
func (c *chaos) start(ctx context.Context) error {
	if len(c.slots) == 0 {
		return errors.New("chaos: no worker process runs")
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stopFaults, c.faultsDone = cancel, make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(c.faultsDone)
		c.faults(fctx, begin)
	}()
	return nil
}

// faults runs the schedule, as fractions of the stress phase S:
//
//	0.05 S  a transaction enqueues a unique job and stays open (Hold)
//	0.10 S  poison jobs are enqueued (they crash their processes)
//	0.15 S  a worker process that does not lead is killed (SIGKILL)
//	0.35 S  the leader is stopped (SIGSTOP) for Stop, then resumed
//	0.70 S  every backend of the strategy's sessions is terminated
//	0.85 S  Postgres restarts in immediate mode (own cluster only)
//
// Released early, it resumes what it stopped and commits the open
// transaction before returning.
func (c *chaos) faults(ctx context.Context, begin time.Time) {
	S := c.cfg.Stress
	at := func(f float64) bool { return sleepCtx(ctx, time.Until(begin.Add(time.Duration(f*float64(S))))) }
	var wg sync.WaitGroup
	defer wg.Wait()
	if !at(0.05) {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.openTx(ctx) }()
	if !at(0.10) {
		return
	}
	c.enqueuePoison(ctx)
	if !at(0.15) {
		return
	}
	sl, ok := c.pick(false)
	f := ChaosFault{Kind: "kill", Target: fmt.Sprintf("worker process %d", sl.idx), AtS: round(c.since().Seconds())}
	if !ok {
		f.Note = "every live worker process leads: killed one that does"
	}
	if pid := sl.signal(syscall.SIGKILL); pid == 0 {
		f.Note = "no live process to kill"
	} else {
		f.Target += fmt.Sprintf(" (pid %d)", pid)
		now := c.since()
		c.t.crash.add(sl.idx, now-chaosCrashSpan, now+time.Second)
	}
	c.fault(f)
	if !at(0.35) {
		return
	}
	c.stopLeader(ctx)
	if !at(0.70) {
		return
	}
	c.terminate(ctx)
	if !at(0.85) {
		return
	}
	c.restart(ctx)
}

// stopLeader stops the leading worker process for Stop, then resumes it.
func (c *chaos) stopLeader(ctx context.Context) {
	sl, ok := c.pick(true)
	f := ChaosFault{Kind: "stop", Target: fmt.Sprintf("worker process %d", sl.idx), AtS: round(c.since().Seconds())}
	if ok {
		f.Target = "the leader, " + f.Target
	} else {
		f.Note = "no worker process said it leads: stopped process 0"
	}
	began := time.Now()
	pid := sl.signal(syscall.SIGSTOP)
	if pid == 0 {
		f.Note = "no live process to stop"
		c.fault(f)
		return
	}
	f.Target += fmt.Sprintf(" (pid %d)", pid)
	now := c.since()
	// Until a second after it resumes: a resumed process may start a job
	// of a batch it held before it learns it is dead (the job then runs
	// elsewhere too). Registered now: its jobs run again elsewhere while
	// it is stopped.
	c.t.crash.add(sl.idx, now-chaosCrashSpan, now+c.opts.Stop+time.Second)
	i := c.fault(f)
	t := time.NewTimer(c.opts.Stop)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	sl.signal(syscall.SIGCONT)
	c.update(i, func(f *ChaosFault) { f.DurationS = round(time.Since(began).Seconds()) })
}

// terminate ends every backend of the strategy's sessions in the
// database: all but the bench's own (sampler, chaos, stress sessions).
func (c *chaos) terminate(ctx context.Context) {
	f := ChaosFault{Kind: "terminate", Target: "the strategy's backends", AtS: round(c.since().Seconds())}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := connectAs(cctx, c.url, AppChaos)
	if err != nil {
		f.Note = "connect: " + err.Error()
		c.fault(f)
		return
	}
	defer conn.Close(context.Background())
	own := append([]string{"millrace-bench-sampler", AppChaos}, AppNames...)
	var n int
	err = conn.QueryRow(cctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		  AND NOT application_name = ANY($1)`, own).Scan(&n)
	if err != nil {
		f.Note = err.Error()
	} else {
		f.Note = fmt.Sprintf("%d backends terminated", n)
	}
	c.fault(f)
}

// restart restarts Postgres in immediate mode, when the bench runs its
// own cluster.
func (c *chaos) restart(ctx context.Context) {
	if c.cfg.Restart == nil {
		return
	}
	f := ChaosFault{Kind: "restart", Target: "PostgreSQL (immediate mode)", AtS: round(c.since().Seconds())}
	i := c.fault(f)
	began := time.Now()
	// Not cut short by the end of the stress: a server half restarted
	// would stay down.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	err := c.cfg.Restart(rctx)
	c.update(i, func(f *ChaosFault) {
		f.DurationS = round(time.Since(began).Seconds())
		if err != nil {
			f.Note = err.Error()
		}
	})
	if err != nil {
		c.mu.Lock()
		c.stats.Restart = "failed: " + err.Error()
		c.mu.Unlock()
	}
	// A claim commits asynchronously (Store.Claim): a claim that committed
	// within the WAL writer's delay before the crash may be lost with it,
	// and its jobs, already started, are claimed again. So every process's
	// runs from 2 s before the restart until it is over are in a window.
	down := time.Since(began)
	now := c.since()
	for _, sl := range c.slots {
		c.t.crash.add(sl.idx, now-down-2*time.Second, now+time.Second)
	}
	// An outage longer than the process lease ends every process's
	// identity (no process could renew it): their batches are released,
	// and the jobs they ran may run again.
	if down >= cmpOr(c.opts.Leases.Process, defaultProcessLease) {
		for _, sl := range c.slots {
			c.t.crash.add(sl.idx, now-down-chaosCrashSpan, now+time.Second)
		}
		c.update(i, func(f *ChaosFault) {
			f.Note = strings.TrimPrefix(f.Note+"; the outage outlasted the process lease: every process's jobs may run again", "; ")
		})
	}
}

// enqueuePoison enqueues the poison jobs, ChaosPoisonAttempts attempts
// each.
func (c *chaos) enqueuePoison(ctx context.Context) {
	f := ChaosFault{Kind: "poison", Target: fmt.Sprintf("%d jobs that crash their process, %d attempts each", c.opts.Poison, ChaosPoisonAttempts),
		AtS: round(c.since().Seconds())}
	for range c.opts.Poison {
		id := c.t.newSideID()
		c.t.chunkOf(id).meta[id&(chunkSize-1)].Store(uint32(kindPoison))
		ectx, cancel := context.WithTimeout(ctx, time.Minute)
		ref, err := c.s.EnqueueAttempts(ectx, Job{ID: id, Payload: payload}, ChaosPoisonAttempts)
		cancel()
		if err != nil {
			c.t.markFailed([]int64{id})
			f.Note = "enqueue: " + err.Error()
			continue
		}
		c.t.markEnqueued([]int64{id})
		c.mu.Lock()
		c.poison = append(c.poison, poisonJob{id, ref})
		c.mu.Unlock()
	}
	c.fault(f)
}

// openTx enqueues a unique job in a transaction that stays open for Hold,
// then commits.
func (c *chaos) openTx(ctx context.Context) {
	f := ChaosFault{Kind: "open-tx", Target: "a transaction that enqueued a unique job", AtS: round(c.since().Seconds())}
	ot := &ChaosOpenTx{}
	c.mu.Lock()
	c.stats.OpenTx = ot
	c.mu.Unlock()
	id := c.t.newSideID()
	fail := func(what string, err error) {
		c.t.markFailed([]int64{id})
		f.Note = what + ": " + err.Error()
		c.fault(f)
	}
	cctx := context.WithoutCancel(ctx)
	conn, err := connectAs(cctx, c.url, AppChaos)
	if err != nil {
		fail("connect", err)
		return
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(cctx)
	if err != nil {
		fail("begin", err)
		return
	}
	if err := c.s.EnqueueUniqueTx(cctx, tx, Job{ID: id, Payload: payload}, fmt.Sprintf("chaos-open-tx-%d", id)); err != nil {
		_ = tx.Rollback(cctx)
		fail("enqueue", err)
		return
	}
	began := time.Now()
	i := c.fault(f)
	sleepCtx(ctx, c.opts.Hold)
	err = tx.Commit(cctx)
	held := time.Since(began)
	c.update(i, func(f *ChaosFault) {
		f.DurationS = round(held.Seconds())
		if err != nil {
			f.Note = "commit: " + err.Error()
		}
	})
	c.mu.Lock()
	ot.HeldS = round(held.Seconds())
	ot.Committed = err == nil
	c.mu.Unlock()
	if err != nil {
		c.t.markFailed([]int64{id})
		return
	}
	c.t.markEnqueued([]int64{id})
	c.mu.Lock()
	c.openTxID = id
	c.mu.Unlock()
}

// release ends the faults (resuming a stopped process, committing the
// open transaction) and starts the clock of the stranded jobs' check.
func (c *chaos) release() {
	if c.stopFaults == nil {
		return
	}
	c.stopFaults()
	<-c.faultsDone
	c.stopFaults = nil
	c.stressEnd = time.Now()
	after := chaosStranded
	if c.cfg.Recovery > 0 {
		after = min(after, c.cfg.Recovery)
	} else {
		after = 0
	}
	c.mu.Lock()
	c.strandedAfter = after
	c.mu.Unlock()
	go func() {
		time.Sleep(after)
		c.measureStranded()
	}()
}

// measureStranded counts the jobs enqueued and due before the stress
// ended that have not finished now. It measures once; the run calls it at
// its end too, in case the schedule was cut short.
func (c *chaos) measureStranded() {
	c.strandOnce.Do(func() {
		end := c.stressEnd
		if end.IsZero() {
			end = time.Now()
		}
		endNS := end.Sub(c.t.start)
		ids := c.t.unfinished(nil, func(id int64, enq time.Duration, meta uint32) bool {
			if kindOf(meta) == kindPoison || enq > endNS {
				return false
			}
			at := c.t.chunkOf(id).runAt[id&(chunkSize-1)].Load()
			return at == 0 || time.Duration(at) <= endNS
		})
		// A job waiting out a retry's backoff (a failed attempt, or one
		// charged to a process that died running it: 2^attempt seconds),
		// or whose backoff ended less than the stranded window ago, is
		// not stranded: a retry is held to what a new job is, to finish
		// within the window from when it fell due (a dead process's
		// running jobs are charged with a backoff of 2^attempt seconds,
		// which may end just before the check).
		if len(ids) > 0 {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c.mu.Lock()
			grace := c.strandedAfter
			c.mu.Unlock()
			waiting, err := c.s.Retrying(rctx, ids, grace)
			cancel()
			if err == nil && len(waiting) > 0 {
				kept := ids[:0]
				for _, id := range ids {
					if !waiting[id] {
						kept = append(kept, id)
					}
				}
				ids = kept
				c.t.note(fmt.Sprintf("%d unfinished jobs wait for a retry's backoff at the stranded check (not stranded)", len(waiting)))
			}
		}
		var where map[int64]string
		if e, ok := c.s.(Explainer); ok && len(ids) > 0 {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			where, _ = e.Explain(rctx, ids[:min(len(ids), 10)])
			cancel()
		}
		for _, id := range ids[:min(len(ids), 10)] {
			last := c.t.chunkOf(id).last[id&(chunkSize-1)].Load()
			note := fmt.Sprintf("stranded: job %d (%s) unfinished after %d runs; the last started in process %d at %.1fs",
				id, kindOf(c.t.metaOf(id)), c.t.runsOf(id), last&0xff, time.Duration(last>>8).Seconds())
			if w := where[id]; w != "" {
				note += " (" + w + ")"
			}
			c.t.note(note)
		}
		c.mu.Lock()
		c.stats.Stranded = int64(len(ids))
		c.stats.StrandedAfterS = round(time.Since(end).Seconds())
		c.mu.Unlock()
		close(c.stranded)
	})
}

// poisonSettled says every poison job has an end (discarded, or another
// final state): the drain waits for it while the processes still run, since
// a poison job's last crash, late in a loaded run, is charged only once its
// process's lease runs out and the leader rescues its batch.
func (c *chaos) poisonSettled(ctx context.Context) bool {
	c.mu.Lock()
	poison := append([]poisonJob(nil), c.poison...)
	c.mu.Unlock()
	for _, p := range poison {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		state, err := c.s.FinalState(sctx, p.ref)
		cancel()
		if err != nil || (state != "discarded" && state != "completed" && state != "cancelled") {
			return false
		}
	}
	return true
}

// summary completes the figures once the run has ended: the poison jobs'
// fates, the duplicates, the faults' recovery from the samples and the
// storage.
func (c *chaos) summary(ctx context.Context, samples []Sample, rate float64, lost int64) *ChaosStats {
	c.measureStranded()
	<-c.stranded
	c.mu.Lock()
	st := c.stats
	st.Faults = append([]ChaosFault(nil), c.stats.Faults...)
	poison := append([]poisonJob(nil), c.poison...)
	if st.OpenTx != nil {
		ot := *st.OpenTx
		ot.Ran = c.openTxID != 0 && c.t.ran(c.openTxID)
		st.OpenTx = &ot
	}
	c.mu.Unlock()
	st.Lost = lost
	c.t.settleDuplicates()
	st.CrashDuplicated = c.t.crashDuplicates.Load()
	st.Duplicated = c.t.duplicates.Load() - st.CrashDuplicated
	st.Poison = []ChaosPoison{}
	for _, p := range poison {
		cp := ChaosPoison{ID: p.id, Runs: int64(c.t.runsOf(p.id))}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		state, err := c.s.FinalState(sctx, p.ref)
		cancel()
		if err != nil {
			state = "error: " + err.Error()
		}
		cp.State, cp.Discarded = state, state == "discarded"
		st.PoisonMaxRuns = max(st.PoisonMaxRuns, cp.Runs)
		st.Poison = append(st.Poison, cp)
	}
	for i := range st.Faults {
		f := &st.Faults[i]
		if f.Kind == "open-tx" || f.Kind == "poison" {
			continue
		}
		r := recoverS(samples, f.AtS, rate)
		f.RecoverS = &r
		if st.RecoverMaxS >= 0 {
			if r < 0 {
				st.RecoverMaxS = -1
			} else {
				st.RecoverMaxS = max(st.RecoverMaxS, r)
			}
		}
	}
	st.Notes = c.t.notesNow()
	for _, s := range samples {
		q := s.StorageBytes - s.HistoryBytes
		switch s.Phase {
		case PhaseClean:
			st.CleanStorageMaxBytes = max(st.CleanStorageMaxBytes, q)
		case PhaseStress, PhaseRecovery:
			st.StorageMaxBytes = max(st.StorageMaxBytes, q)
		}
	}
	return &st
}

// recoverS is how long after at (seconds since the run's start) the run
// was back at the offered rate: the first of two samples in a row, after
// at, whose jobs completed (or cancelled or de-duplicated, which never
// run) were at least 90% of those offered and whose backlog was within
// one second of the offered rate of the backlog of the last sample before
// at. -1 if that never happened.
func recoverS(samples []Sample, at, rate float64) float64 {
	var base int64
	found := false
	ok := func(s Sample) bool {
		return float64(s.Backlog) <= float64(base)+max(rate, 10) &&
			float64(s.Completed+s.Cancelled+s.Deduplicated) >= 0.9*float64(s.Offered)
	}
	for i, s := range samples {
		if s.T <= at {
			base, found = s.Backlog, true
			continue
		}
		if !found {
			base, found = s.Backlog, true
		}
		if ok(s) && (i+1 == len(samples) || ok(samples[i+1])) {
			return round(max(s.T-at, 0))
		}
	}
	return -1
}

// Line is the chaos figures in one line, for the table and the report.
func (st *ChaosStats) Line() string {
	poison := make([]string, 0, len(st.Poison))
	discarded := 0
	for _, p := range st.Poison {
		if p.Discarded {
			discarded++
		}
		poison = append(poison, fmt.Sprintf("%d runs, %s", p.Runs, p.State))
	}
	ratio := ""
	if st.CleanStorageMaxBytes > 0 {
		ratio = fmt.Sprintf(", %.1fx clean's %.1f MB", float64(st.StorageMaxBytes)/float64(st.CleanStorageMaxBytes), float64(st.CleanStorageMaxBytes)/1e6)
	}
	rec := fmt.Sprintf("%gs", st.RecoverMaxS)
	if st.RecoverMaxS < 0 {
		rec = "not recovered by the end of the run"
	}
	var faults []string
	for _, f := range st.Faults {
		s := fmt.Sprintf("%s at %gs", f.Kind, f.AtS)
		if f.DurationS > 0 {
			s += fmt.Sprintf(" for %gs", f.DurationS)
		}
		if f.RecoverS != nil {
			if *f.RecoverS < 0 {
				s += " (not recovered)"
			} else {
				s += fmt.Sprintf(" (recovered in %gs)", *f.RecoverS)
			}
		}
		faults = append(faults, s)
	}
	tx := "none"
	if ot := st.OpenTx; ot != nil {
		tx = fmt.Sprintf("held %gs, committed %v, its job ran %v", ot.HeldS, ot.Committed, ot.Ran)
	}
	return fmt.Sprintf("lost %d, duplicated %d outside crash windows (%d in them), stranded %d (%gs after the stress); poison jobs: max runs %d of %d, %d of %d discarded (%s); open transaction: %s; recovery max %s; queue storage max %.1f MB%s; processes started %d, crashed %d; restart: %s; faults: %s",
		st.Lost, st.Duplicated, st.CrashDuplicated, st.Stranded, st.StrandedAfterS, st.PoisonMaxRuns, ChaosPoisonAttempts, discarded, len(st.Poison), strings.Join(poison, "; "),
		tx, rec, float64(st.StorageMaxBytes)/1e6, ratio, st.Spawned, st.Exits, st.Restart, strings.Join(faults, ", "))
}
