package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is one bench run: strategies, one after another, through the same
// scenario and schedule on the same database.
type Config struct {
	URL        string // database the strategies work in
	StandbyURL string // a hot standby of that database, for the standby scenario
	// PoolerURL, when set, is the same database through a connection
	// pooler (--pooler): the strategies' connections go through it; the
	// bench's own (sampler, stress) and a millrace process's session
	// connection go to URL.
	PoolerURL string
	// Pooler and PGSettings describe the environment (--pooler,
	// --pg-setting) for the summary.
	Pooler     string
	PGSettings []string

	Strategies []string
	Scenario   string
	Rate       float64 // jobs offered per second; 0 means as fast as each strategy keeps up
	Jobs       int64   // jobs of the burndown scenario
	// Workers is the number of workers over all processes; 0 gives each
	// strategy its default: DefaultWorkers, or its own (WorkerDefaulter).
	Workers int
	// Processes splits the workers into that many independent clients
	// (each with its own connections), as processes would; 0 means 1.
	Processes int
	Work      time.Duration
	// Mix makes some of the paced producer's jobs fail once, snooze once,
	// get cancelled while they wait, run later, or duplicate a unique job
	// (--mix); the zero Mix offers plain jobs only.
	Mix Mix
	// Limit is --limit: the concurrency limit set on a Limiter's queue.
	Limit Limit
	// MixSchedMax, when not 0, replaces MixSchedMax as the longest delay
	// of a scheduled job (short test runs).
	MixSchedMax time.Duration

	Warmup, Clean, Stress, Recovery time.Duration

	// RotateAfter, when not 0, is the millrace client's RotateAfter (the
	// ring's turn, and so how often a slot is reclaimed); 0 keeps the
	// library's default. Other strategies, and the chaos scenario's worker
	// processes, ignore it. No flag sets it: the acceptance test of issue
	// 31 turns the ring every few seconds.
	RotateAfter time.Duration

	// WatchQueues, when not 0, reads the queues as the dashboard's queues
	// page does, at this interval, while a strategy that has a dashboard
	// (Watcher) runs: what looking costs (--watch-queues).
	WatchQueues time.Duration

	// Analytics sets the analytics scenario's readers (zero: the defaults).
	Analytics Analytics

	// Chaos tunes the chaos scenario (zero: as the command runs it).
	Chaos ChaosOptions
	// Restart, when set, restarts the server in immediate mode (the
	// bench's own cluster): the chaos scenario's restart. Without it the
	// scenario skips the restart and says so.
	Restart func(ctx context.Context) error
	// ChildCommand is the command line that starts a chaos worker
	// process; it must call ChildMain first (default: this executable,
	// with the argument "bench").
	ChildCommand []string

	Out string // directory for timeseries.jsonl and summary.json

	// Progress receives the live progress line and per-strategy results;
	// nil discards them. TTY makes the live line rewrite itself in place.
	Progress io.Writer
	TTY      bool

	// Guard, when set, runs for each strategy's whole run (the guard of a
	// --guard policy); it returns when its context is cancelled.
	Guard func(ctx context.Context) error

	// Metrics, when set, receives the Prometheus metrics of the
	// strategies that export them (see Instrumented); --metrics-listen
	// serves it.
	Metrics *prometheus.Registry
}

// Result is what a run produced.
type Result struct {
	Summary *Summary
	Samples []Sample
}

// Lost sums the lost jobs of every strategy.
func (r *Result) Lost() int64 {
	var n int64
	for _, s := range r.Summary.Strategies {
		n += s.LostJobs
	}
	return n
}

// MixDefects describes, in one line, what a --mix run saw that the
// queue promises never happens: cancelled jobs that ran, unique
// duplicates stored or run, scheduled jobs started early. Empty when none.
func (r *Result) MixDefects() string {
	var out []string
	for _, name := range sortedKeys(r.Summary.Strategies) {
		ss := r.Summary.Strategies[name]
		if ss.Mix == nil {
			continue
		}
		var cancelled, dupes int64
		for _, ps := range ss.Phases {
			if ps.CancelledRun != nil {
				cancelled += *ps.CancelledRun
			}
			if ps.UniqueDupesRun != nil {
				dupes += *ps.UniqueDupesRun
			}
		}
		for _, d := range []struct {
			n    int64
			what string
		}{{cancelled, "cancelled jobs ran"}, {dupes, "unique duplicates ran"},
			{ss.Mix.UniqueNotDeduplicated, "unique duplicates were stored"}, {ss.Mix.SchedEarly, "scheduled jobs started early"}} {
			if d.n > 0 {
				out = append(out, fmt.Sprintf("%s: %d %s", name, d.n, d.what))
			}
		}
	}
	return strings.Join(out, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type span struct {
	phase string
	d     time.Duration
}

func (c *Config) schedule() []span {
	if c.Scenario == ScenarioBurndown {
		return []span{{PhaseBurndown, 0}}
	}
	var out []span
	for _, s := range []span{{PhaseWarmup, c.Warmup}, {PhaseClean, c.Clean}, {PhaseStress, c.Stress}, {PhaseRecovery, c.Recovery}} {
		if s.d > 0 {
			out = append(out, s)
		}
	}
	return out
}

func (c *Config) processes() int { return max(c.Processes, 1) }

// DefaultWorkers is the number of workers of a strategy when --workers is
// not given and the strategy names no default of its own.
const DefaultWorkers = 32

// GoroutineWorkers is the default worker count of the strategies whose
// workers are goroutines fed by batched claims (millrace, river): River's
// own benchmark's 2,000. A waiting worker costs them nothing, and a
// claim takes at most as many jobs as its process has workers, so with
// the 32 of a connection-per-worker strategy a burn-down shared by four
// processes claims 8 jobs at a time.
const GoroutineWorkers = 2000

// WorkersFor is the number of workers the named strategy runs, 0 for an
// unknown name.
func (c *Config) WorkersFor(name string) int {
	f, err := Lookup(name)
	if err != nil {
		return 0
	}
	return c.workersFor(f())
}

// WorkersWhyFor is why the named strategy runs WorkersFor(name) workers
// (WhyWorkersFlag, WhyDefaultWorkers, WhyGoroutineWorkers), "" for an
// unknown name.
func (c *Config) WorkersWhyFor(name string) string {
	f, err := Lookup(name)
	if err != nil {
		return ""
	}
	return c.workersWhy(f())
}

// workersFor is the number of workers strategy s runs.
func (c *Config) workersFor(s Strategy) int {
	if c.Workers > 0 {
		return c.Workers
	}
	if d, ok := s.(WorkerDefaulter); ok && d.DefaultWorkers() > 0 {
		return d.DefaultWorkers()
	}
	return DefaultWorkers
}

// Check reports what is wrong with the configuration before anything runs:
// unknown names, impossible values, and strategies that cannot run the
// scenario or --processes asked for.
func (c *Config) Check() error {
	if _, ok := Scenarios[c.Scenario]; !ok {
		return fmt.Errorf("unknown scenario %q", c.Scenario)
	}
	if len(c.Strategies) == 0 {
		return errors.New("no strategies")
	}
	switch {
	case c.Workers < 0:
		return errors.New("--workers must be at least 1")
	case c.WatchQueues < 0:
		return fmt.Errorf("--watch-queues %s: want a positive interval, or 0 for none", c.WatchQueues)
	case c.Processes < 0:
		return errors.New("--processes must be at least 1")
	case c.Work < 0:
		return errors.New("--work must not be negative")
	case c.RotateAfter < 0:
		return errors.New("RotateAfter must not be negative")
	case c.Rate < 0:
		return errors.New("--rate must be positive or max")
	case c.Scenario == ScenarioBurndown && c.Jobs < 1:
		return errors.New("the burndown scenario needs --jobs N (N >= 1)")
	case c.Scenario != ScenarioBurndown && len(c.schedule()) == 0:
		return errors.New("every phase is 0s: nothing to run")
	case !c.Mix.Zero() && c.Scenario == ScenarioBurndown:
		return errors.New("--mix needs a producer that runs with the workers: --rate N or max, not the burndown scenario")
	case c.Scenario != ScenarioAnalytics && c.Analytics != Analytics{}:
		return fmt.Errorf("--readers, --reader-duration, --reader-interval and --reader-readonly apply to the %s scenario only", ScenarioAnalytics)
	}
	if _, err := ParseMix(c.Mix.String()); err != nil {
		return err
	}
	if c.Scenario == ScenarioChaos {
		switch {
		case c.Rate == 0:
			return errors.New("the chaos scenario needs a paced producer: --rate N, not max")
		case c.processes() < 2:
			return errors.New("the chaos scenario needs --processes 2 or more: it kills one worker process and stops another")
		case c.Stress <= 0:
			return errors.New("the chaos scenario needs a stress phase: --stress D")
		}
	}
	if c.Scenario == ScenarioAnalytics {
		if err := c.Analytics.check(c.Stress); err != nil {
			return err
		}
	}
	for _, n := range c.Strategies {
		f, err := Lookup(n)
		if err != nil {
			return err
		}
		s := f()
		if _, ok := s.(Chaoser); c.Scenario == ScenarioChaos && !ok {
			return fmt.Errorf("strategy %q cannot run the %s scenario (its workers cannot run as processes of their own the bench kills and stops; %s supports it)",
				n, ScenarioChaos, strings.Join(chaosers(), ", "))
		}
		if w := c.workersFor(s); c.processes() > w {
			if c.Workers > 0 {
				return fmt.Errorf("--processes %d is more than --workers %d: every process needs a worker", c.Processes, w)
			}
			return fmt.Errorf("--processes %d is more than the %d workers %s runs by default: every process needs a worker", c.Processes, w, n)
		}
		if m, ok := s.(Multiprocess); c.processes() > 1 && !(ok && m.Multiprocess()) {
			return fmt.Errorf("strategy %q runs as one process only: --processes %d is not supported for it", n, c.Processes)
		}
		if _, ok := s.(Mixer); !c.Mix.Zero() && !ok {
			return fmt.Errorf("strategy %q cannot run --mix (it has no scheduled, unique or cancellable jobs, no snooze and no retry backoff; %s supports it)",
				n, strings.Join(mixers(), ", "))
		}
		if _, ok := s.(Limiter); !c.Limit.Zero() && !ok {
			return fmt.Errorf("strategy %q cannot run --limit (it has no concurrency limit across processes)", n)
		}
		if _, ok := s.(Staller); c.Scenario == ScenarioStall && !ok {
			return fmt.Errorf("strategy %q cannot run the %s scenario (it needs queues a worker does not serve and served on demand; %s supports it)",
				n, ScenarioStall, strings.Join(stallers(), ", "))
		}
	}
	return nil
}

// Run runs every strategy in turn and writes DIR/timeseries.jsonl and
// DIR/summary.json. A strategy that cannot run fails the whole run; lost
// jobs do not (they are in the summary, and Result.Lost counts them).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	ts, err := os.Create(filepath.Join(cfg.Out, "timeseries.jsonl"))
	if err != nil {
		return nil, err
	}
	defer ts.Close()

	ccfg, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	benchSession(ccfg)
	conn, err := pgx.ConnectConfig(ctx, ccfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	sum := &Summary{Scenario: cfg.Scenario, Workers: cfg.Workers, Processes: cfg.processes(), WorkMS: float64(cfg.Work) / float64(time.Millisecond),
		Pooler: cfg.Pooler, PGSettings: cfg.PGSettings,
		Strategies: map[string]*StrategySummary{}}
	if !cfg.Mix.Zero() {
		sum.Mix = &cfg.Mix
	}
	if cfg.Rate > 0 {
		sum.Rate = cfg.Rate
	} else if cfg.Scenario != ScenarioBurndown {
		sum.Rate = "max"
	}
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&sum.PostgresVersion); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, setupSQL); err != nil {
		return nil, fmt.Errorf("bench schema: %w", err)
	}

	res := &Result{Summary: sum}
	enc := json.NewEncoder(ts)
	runErr := func() error {
		for _, name := range cfg.Strategies {
			ss, samples, err := runOne(ctx, &cfg, name, func(s Sample) error { return enc.Encode(s) })
			res.Samples = append(res.Samples, samples...)
			if ss != nil {
				sum.Strategies[name] = ss
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			fmt.Fprintln(cfg.Progress, strategyLine(name, ss, cfg.TTY))
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	}()
	// Every run writes its summary: an interrupted one (Ctrl-C) says so
	// and holds the strategies and phases that ran, a failed one its error.
	if ctx.Err() != nil {
		sum.Interrupted = true
	} else if runErr != nil {
		sum.Error = cmdline.Redact(runErr.Error())
	}
	sum.Verdict = Verdict(sum)
	b, err := json.MarshalIndent(sum, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(cfg.Out, "summary.json"), append(b, '\n'), 0o644)
	}
	return res, cmp.Or(runErr, err)
}

// phaseHists are the latency histograms of one phase (pickup: as the
// strategy's own library reports it).
type phaseHists struct{ claim, e2e, pickup, schedLate, retryLate *hdr.Histogram }

func newPhaseHists() *phaseHists {
	return &phaseHists{newHist(), newHist(), newHist(), newHist(), newHist()}
}

// MixDrain is the longest the workers run on after the last phase of a
// --mix run, until every expected job has completed: the longest delay of
// a scheduled job, and some.
const MixDrain = MixSchedMax + 15*time.Second

// runOne runs one strategy through the schedule.
func runOne(ctx context.Context, cfg *Config, name string, emit func(Sample) error) (*StrategySummary, []Sample, error) {
	f, _ := Lookup(name)
	s := f()
	inst, _ := s.(Instrumented)
	if inst != nil && cfg.Metrics != nil {
		if err := inst.Instrument(cfg.Metrics); err != nil {
			return nil, nil, fmt.Errorf("metrics: %w", err)
		}
	} else {
		inst = nil
	}
	if ps, ok := s.(PoolerAware); ok && cfg.PoolerURL != "" {
		ps.SetSessionURL(cfg.URL)
	}
	if err := s.Setup(ctx, cmp.Or(cfg.PoolerURL, cfg.URL)); err != nil {
		return nil, nil, fmt.Errorf("setup: %w", err)
	}
	defer s.Close()
	var history []string
	if h, ok := s.(Historian); ok {
		history = h.HistoryTables()
	}
	pr, err := dialProbe(ctx, cfg.URL, s.Tables(), history)
	if err != nil {
		return nil, nil, fmt.Errorf("sampler: %w", err)
	}
	defer pr.close()
	// Start each strategy from a checkpoint so that none pays for the
	// previous one's dirty pages (ignored where the role may not).
	_, _ = pr.conn.Exec(ctx, "CHECKPOINT")

	sched := cfg.schedule()
	st, err := newStress(cfg.Scenario, cfg.URL, cfg.StandbyURL, cfg.Stress, cfg.Analytics)
	if err != nil {
		return nil, nil, err
	}
	t := newTracker(time.Now(), cfg.processes())
	var stl *stall
	if cfg.Scenario == ScenarioStall {
		stl = newStall(s.(Staller), t, cfg.URL) // Check made sure it is one
		st = stl
	}
	var cha *chaos
	if cfg.Scenario == ScenarioChaos {
		cha = newChaos(cfg, name, s.(Chaoser), t, time.Now()) // Check made sure it is one
		st = cha
	}
	prod := &producer{s: s, t: t, limit: cfg.Limit}
	mix := !cfg.Mix.Zero()
	if mix {
		prod.mix = newMixer(cfg.Mix, uint64(time.Now().UnixNano()))
		prod.mixer = s.(Mixer) // Check made sure it is one
		prod.schedMax = cmp.Or(cfg.MixSchedMax, MixSchedMax)
	}
	work := cfg.Work
	workers := cfg.workersFor(s)
	var running gauge
	var perKey keyGauges
	started := &startLog{per: cfg.Limit.Per}
	keyStarted := &keyStarts{per: cfg.Limit.KeyPer}
	var hotDone atomic.Int64
	env := Env{URL: cmp.Or(cfg.PoolerURL, cfg.URL), Workers: workers, Processes: cfg.processes(), RotateAfter: cfg.RotateAfter,
		Limit: cfg.Limit,
		Handle: func(ctx context.Context, j Job) error {
			running.enter()
			now := time.Now()
			started.add(now)
			defer running.leave()
			if k := cfg.Limit.KeyOf(j.ID); k != 0 {
				g := perKey.of(k)
				g.enter()
				defer g.leave()
				keyStarted.add(k, now)
			}
			if j.ID < 0 {
				// The hot backlog's job (--limit hot=N): not the producer's.
				hotDone.Add(1)
				time.Sleep(work)
				return nil
			}
			n, kind := t.started(j.ID, j.ReadyAt)
			if err := mixWork(n, kind, work); err != nil {
				return err
			}
			t.finished(j.ID, j.Process)
			return nil
		},
		ObserveClaim:  func(d time.Duration, n int) { t.claim.observe(0, d) },
		ObservePickup: func(d time.Duration) { t.pickup.observe(0, d) },
	}
	if mix {
		env.RetryBackoff = MixBackoff
	}

	if cfg.Scenario == ScenarioBurndown {
		t.setPhase(PhaseBurndown)
		last := time.Now()
		err := prod.bulk(ctx, cfg.Jobs, func(done int64) {
			if cfg.TTY && (time.Since(last) > 500*time.Millisecond || done == cfg.Jobs) {
				last = time.Now()
				cfg.live(fmt.Sprintf("%-16s inserting %d/%d jobs", name, done, cfg.Jobs))
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("bulk insert: %w", err)
		}
		// Counters restart with the workers: the burndown phase measures
		// working down, not inserting.
		t.offered.Store(0)
	}

	if cfg.Limit.Hot > 0 && cfg.Scenario != ScenarioBurndown {
		// The backlog of one key, before the workers start: it waits in
		// the queue when the run begins.
		last := time.Now()
		err := prod.hot(ctx, cfg.Limit.Hot, func(done int64) {
			if cfg.TTY && (time.Since(last) > 500*time.Millisecond || done == cfg.Limit.Hot) {
				last = time.Now()
				cfg.live(fmt.Sprintf("%-16s inserting the hot key's backlog %d/%d", name, done, cfg.Limit.Hot))
			}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("hot backlog insert: %w", err)
		}
	}

	phase := &phaseState{name: sched[0].phase}
	start := time.Now()
	t.start = start
	if cha != nil {
		cha.begun = start
	}
	// End-to-end latency of pre-inserted jobs would measure the insert,
	// not the queue.
	t.noE2E = cfg.Scenario == ScenarioBurndown

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if cfg.Guard != nil {
		gctx, stopGuard := context.WithCancel(ctx)
		var gwg sync.WaitGroup
		gwg.Add(1)
		go func() { defer gwg.Done(); _ = cfg.Guard(gctx) }()
		defer func() { stopGuard(); gwg.Wait() }()
	}

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	workDone := make(chan error, 1)
	if cha != nil {
		cha.makeSlots(env)
		go func() { workDone <- cha.work(workCtx, env) }()
	} else {
		go func() { workDone <- s.Work(workCtx, env) }()
	}

	prodCtx, stopProd := context.WithCancel(runCtx)
	var prodWG sync.WaitGroup
	var watched *WatchStats
	if w, ok := s.(Watcher); ok && cfg.WatchQueues > 0 {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); watched = watchQueues(prodCtx, cfg.URL, cfg.WatchQueues, w) }()
	}
	// Jobs offered from the start count in the first phase: the producer
	// starts before the schedule's loop labels it, and a job counted in no
	// reported phase left its cancel out of every phase's tally.
	if len(sched) > 0 {
		t.setPhase(sched[0].phase)
	}
	switch {
	case cfg.Scenario == ScenarioBurndown:
	case cfg.Rate > 0:
		conc := min(64, max(8, int(cfg.Rate/50)))
		prodWG.Add(1)
		go func() { defer prodWG.Done(); prod.paced(prodCtx, start, cfg.Rate, conc) }()
	default:
		limit := int64(max(4*min(s.MaxBatch(), 500), 20*workers))
		prodWG.Add(1)
		// A batch of a mix takes more round trips, each waited for: its
		// plain jobs' insert, its special jobs' (scheduled, to cancel,
		// unique), their unique duplicates', and one cancel per job to
		// cancel. More goroutines keep up with that.
		conc := 4
		if mix {
			conc = 32
		}
		go func() { defer prodWG.Done(); prod.flat(prodCtx, conc, limit) }()
	}

	// The sampler: one Sample a second until the schedule ends.
	smp := &sampling{cfg: cfg, name: name, t: t, probe: pr, start: start, phases: map[string]*phaseHists{}}
	if r, ok := s.(Rotator); ok {
		smp.rotator = r
		smp.readRotations(ctx) // the baseline: rotations before the run are not counted
	}
	var samplerWG sync.WaitGroup
	samplerWG.Add(1)
	samplerCtx, stopSampler := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer samplerWG.Done()
		smp.loop(samplerCtx, phase, emit)
	}()

	var runErr error
	if cfg.Scenario == ScenarioBurndown {
		for t.completed.Load() < t.enqueued.Load() && runCtx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		smp.burndown = time.Since(start)
	} else {
		for _, sp := range sched {
			// The label and the stress change together, so that a sample
			// labelled stress is always read while the stress holds.
			phase.mu.Lock()
			if phase.name == PhaseStress && st != nil {
				st.release()
			}
			phase.name = sp.phase
			t.setPhase(sp.phase)
			if sp.phase == PhaseStress && st != nil {
				runErr = st.start(runCtx)
			}
			phase.mu.Unlock()
			if runErr != nil {
				break
			}
			sleepCtx(runCtx, sp.d)
			if runCtx.Err() != nil {
				break
			}
		}
	}
	if st != nil {
		phase.mu.Lock()
		st.release() // a last stress phase, and on Ctrl-C
		phase.mu.Unlock()
	}
	stopProd()
	prodWG.Wait()
	stopSampler()
	samplerWG.Wait()
	var mixStats *MixStats
	if mix {
		// Scheduled and retried jobs offered near the end fall due after
		// it: the workers run on until every expected job has completed,
		// so that each phase's completed figure is final.
		mixStats = &MixStats{}
		began := time.Now()
		for (t.pending() > 0 || (cha != nil && !cha.poisonSettled(ctx))) && time.Since(began) < prod.schedMax+MixDrain-MixSchedMax && ctx.Err() == nil {
			if cfg.TTY || int(time.Since(began).Seconds())%10 == 0 {
				cfg.live(fmt.Sprintf("%-16s drain    %4.0fs  %d expected jobs not completed yet", name, time.Since(began).Seconds(), t.pending()))
			}
			sleepCtx(ctx, time.Second)
		}
		mixStats.DrainS = round(time.Since(began).Seconds())
		mixStats.DrainPending = max(t.pending(), 0)
	}
	stopWork()
	select {
	case err := <-workDone:
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("work: %w", err)
		}
	case <-time.After(2 * time.Minute):
		if runErr == nil {
			runErr = errors.New("workers did not stop within 2 minutes")
		}
	}

	if stl != nil && runErr == nil && ctx.Err() == nil {
		// The unserved queue's jobs are served now, so that each counts
		// once and none is mistaken for lost.
		cfg.live(fmt.Sprintf("%-16s serving %s until its jobs have run", name, QueueStallUnserved))
		if err := stl.drain(ctx, 2*time.Minute); err != nil {
			runErr = fmt.Errorf("stall drain: %w", err)
		}
	}

	if mixStats != nil {
		mixStats.PendingByKind = t.settle() // before the summary: it counts unique_dupes_run
	}
	ss := smp.summary(sched)
	ss.Workers = workers
	ss.WorkersWhy = cfg.workersWhy(s)
	ss.DuplicateJobs = t.duplicates.Load()
	ss.MostRunning = running.most.Load()
	ss.MostStarted = started.most()
	ss.MostRunningPerKey = perKey.most()
	ss.MostStartedPerKey = keyStarted.most()
	ss.HotDone = hotDone.Load()
	ss.PerProcessCompleted = t.perProcess()
	ss.Totals = &RunTotals{Offered: t.offered.Load(), Enqueued: t.enqueued.Load(), Completed: t.completed.Load()}
	if inst != nil {
		ss.Metrics = inst.MetricTotals()
	}
	if mixStats != nil {
		mixStats.CancelMissed = t.cancelMissed.Load()
		mixStats.UniqueNotDeduplicated = t.uniqueNotDeduped.Load()
		mixStats.UniqueSkipped = t.uniqueSkipped.Load()
		mixStats.SchedEarly = t.schedEarly.Load()
		mixStats.Notes = t.notesNow()
		ss.Mix = mixStats
	}
	if stl != nil {
		ss.Stall = stl.summary()
	}
	if a, ok := st.(*analytics); ok {
		// The readers run in the stress phase only, and are released
		// with it.
		rs := a.stats()
		ss.Readers = &rs
		if ps := ss.Phases[PhaseStress]; ps != nil {
			ps.Readers = &rs
		}
	}
	if prod.errors.Load() > 0 {
		ss.EnqueueErrors = prod.errors.Load()
		if e := prod.lastErr.Load(); e != nil {
			ss.EnqueueLastError = *e
		}
	}
	ss.Watch = watched
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	remaining, err := s.Remaining(rctx)
	if err != nil {
		return ss, smp.samples, fmt.Errorf("remaining: %w", err)
	}
	ss.LostJobs = int64(len(t.reconcile(remaining)))
	if cha != nil {
		// Lost in chaos: never finished (a run cut by a crash is no
		// finish), no longer stored.
		ss.LostJobs = int64(len(t.unfinished(remaining, nil)))
		ss.Chaos = cha.summary(rctx, smp.samples, cfg.Rate, ss.LostJobs)
	}
	return ss, smp.samples, runErr
}

// sampling turns counters, histograms and probe reads into one Sample a
// second, and phase summaries at the end.
type sampling struct {
	cfg   *Config
	name  string
	t     *tracker
	probe *probe
	start time.Time

	samples  []Sample
	phases   map[string]*phaseHists
	burndown time.Duration // how long the burndown took

	offered, enqueued, completed int64

	rotator   Rotator // nil when the strategy does not rotate
	rotations int64   // cumulative rotations at the last successful read
	rotRead   bool    // rotations holds a successful read
}

// readRotations reads the strategy's cumulative rotation count and returns
// how many rotations happened since the last successful read. A failed read
// counts nothing; the next good one catches up.
func (m *sampling) readRotations(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := m.rotator.Rotations(ctx)
	if err != nil {
		return 0
	}
	var d int64
	if m.rotRead {
		d = max(0, n-m.rotations)
	}
	m.rotations, m.rotRead = n, true
	return d
}

// phaseState is the current phase's name; the run holds mu while it
// changes the phase and starts or releases the stress, the sampler while it
// reads a sample.
type phaseState struct {
	mu   sync.Mutex
	name string
}

func (m *sampling) loop(ctx context.Context, phase *phaseState, emit func(Sample) error) {
	cur := newPhaseHists()
	var cancelled, deduped int64
	for k := 1; ; k++ {
		if !sleepCtx(ctx, time.Until(m.start.Add(time.Duration(k)*time.Second))) {
			return
		}
		phase.mu.Lock()
		p := phase.name
		claim, e2e, pickup := cur.claim, cur.e2e, cur.pickup
		for _, h := range []*hdr.Histogram{cur.claim, cur.e2e, cur.pickup, cur.schedLate, cur.retryLate} {
			h.Reset()
		}
		m.t.claim.drain(claim)
		m.t.e2e.drain(e2e)
		m.t.schedLate.drain(cur.schedLate)
		m.t.retryLate.drain(cur.retryLate)
		m.t.pickup.drain(pickup)
		s := Sample{Strategy: m.name, Phase: p, T: float64(k), Unix: float64(time.Now().UnixMilli()) / 1000}
		off, enq, done := m.t.offered.Load(), m.t.enqueued.Load(), m.t.completed.Load()
		s.Offered, s.Enqueued, s.Completed = off-m.offered, enq-m.enqueued, done-m.completed
		m.offered, m.enqueued, m.completed = off, enq, done
		s.Backlog = enq - done
		s.ClaimP50, s.ClaimP99, s.ClaimMax = ms(claim, 50), ms(claim, 99), float64(claim.Max())/1000
		s.E2EP50, s.E2EP99 = ms(e2e, 50), ms(e2e, 99)
		s.Backlog -= m.t.cancelled.Load()
		s.PickupP50, s.PickupP99 = ms(pickup, 50), ms(pickup, 99)
		s.Duplicates = m.t.duplicates.Load()
		if !m.cfg.Mix.Zero() {
			var c, d int64
			for i := range m.t.perPhase {
				pc := &m.t.perPhase[i]
				c += pc.cancelled.Load()
				d += pc.deduped.Load()
				s.CancelledRun += pc.cancelledRun.Load()
			}
			s.Cancelled, s.Deduplicated = c-cancelled, d-deduped
			cancelled, deduped = c, d
			s.SchedLateP99 = ms(cur.schedLate, 99)
		}
		if err := m.probe.read(ctx, &s); err != nil && ctx.Err() == nil {
			s.XminHolder = "sampler error: " + err.Error()
		}
		if m.rotator != nil {
			s.Rotations = m.readRotations(ctx)
		}
		phase.mu.Unlock()
		ph := m.phases[p]
		if ph == nil {
			ph = newPhaseHists()
			m.phases[p] = ph
		}
		ph.claim.Merge(cur.claim)
		ph.e2e.Merge(cur.e2e)
		ph.schedLate.Merge(cur.schedLate)
		ph.retryLate.Merge(cur.retryLate)
		ph.pickup.Merge(cur.pickup)
		m.samples = append(m.samples, s)
		_ = emit(s)
		if m.cfg.TTY || k%10 == 0 {
			m.cfg.live(liveLine(&s, !m.cfg.Mix.Zero()))
		}
	}
}

// summary aggregates the samples of each phase.
func (m *sampling) summary(sched []span) *StrategySummary {
	ss := &StrategySummary{Phases: map[string]*PhaseSummary{}}
	for _, sp := range sched {
		if sp.phase == PhaseWarmup {
			continue
		}
		ps := &PhaseSummary{}
		var offered, completed, wal, cpu float64
		var rotations int64
		for _, s := range m.samples {
			if s.Phase != sp.phase {
				continue
			}
			ps.Seconds++
			offered += float64(s.Offered)
			completed += float64(s.Completed)
			wal += float64(s.WALBytes)
			cpu += s.PgCPUPct
			ps.BacklogEnd = s.Backlog
			ps.BacklogMax = max(ps.BacklogMax, s.Backlog)
			ps.DeadTuplesMax = max(ps.DeadTuplesMax, s.DeadTuples)
			ps.StorageBytesMax = max(ps.StorageBytesMax, s.StorageBytes)
			ps.HistoryBytesMax = max(ps.HistoryBytesMax, s.HistoryBytes)
			rotations += s.Rotations
			ps.XminAgeMaxS = max(ps.XminAgeMaxS, s.XminAgeS)
		}
		if sp.phase == PhaseBurndown && m.burndown > 0 {
			// The burndown is timed to its last job, not in whole seconds.
			ps.Seconds = m.burndown.Seconds()
			enq, done := m.t.enqueued.Load(), m.t.completed.Load()
			offered, completed = float64(enq), float64(done)
			// The last sample may predate the last job; the end is exact.
			ps.BacklogEnd = max(0, enq-done)
		}
		if ps.Seconds == 0 {
			continue
		}
		ps.OfferedPerS = round(offered / ps.Seconds)
		ps.CompletedPerS = round(completed / ps.Seconds)
		ps.PgCPUPct = round(cpu / float64(countPhase(m.samples, sp.phase)))
		if completed > 0 {
			ps.WALBytesPerJob = round(wal / completed)
		}
		if m.rotator != nil {
			ps.Rotations = &rotations
		}
		h := m.phases[sp.phase]
		if h != nil {
			ps.ClaimP50MS, ps.ClaimP99MS = ms(h.claim, 50), ms(h.claim, 99)
			ps.E2EP50MS, ps.E2EP99MS = ms(h.e2e, 50), ms(h.e2e, 99)
			ps.PickupP50MS, ps.PickupP99MS = ms(h.pickup, 50), ms(h.pickup, 99)
		}
		pc := &m.t.perPhase[phaseIndex[sp.phase]]
		ps.Offered, ps.Completed = pc.offered.Load(), pc.completed.Load()
		ps.Expected = ps.Offered - pc.cancelled.Load() - pc.deduped.Load()
		if sp.phase == PhaseBurndown {
			// Offered before the workers started: the jobs enqueued.
			ps.Offered, ps.Expected = m.t.enqueued.Load(), m.t.enqueued.Load()
		}
		if !m.cfg.Mix.Zero() {
			if h == nil {
				h = newPhaseHists()
			}
			ps.Cancelled, ps.Deduplicated = ptr(pc.cancelled.Load()), ptr(pc.deduped.Load())
			ps.CancelledRun, ps.UniqueDupesRun = ptr(pc.cancelledRun.Load()), ptr(pc.uniqueDupesRun.Load())
			ps.SchedLateP99MS, ps.SchedLateMaxMS = ptr(ms(h.schedLate, 99)), ptr(float64(h.schedLate.Max())/1000)
			ps.RetryLateP99MS = ptr(ms(h.retryLate, 99))
		}
		ss.Phases[sp.phase] = ps
	}
	return ss
}

func countPhase(samples []Sample, phase string) int {
	n := 0
	for _, s := range samples {
		if s.Phase == phase {
			n++
		}
	}
	return max(n, 1)
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func ptr[T any](v T) *T { return &v }
