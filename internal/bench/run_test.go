package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/bench"
	_ "github.com/millrace/millrace/internal/bench/classic"
	_ "github.com/millrace/millrace/internal/bench/native"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millracetest/pgcluster"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) {
	bench.ChildMain() // a worker process of TestRunChaos
	testkit.Main(m)
}

// TestRunIdleXid runs two strategies through a short idle-xid schedule and
// checks what the run writes: the phases, the pin seen in stress and gone
// in recovery, every job accounted for, and both output files.
func TestRunIdleXid(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	out := t.TempDir()
	cfg := bench.Config{URL: url, Strategies: []string{"skiplocked", "millrace"}, Scenario: bench.ScenarioIdleXid,
		Rate: 200, Workers: 4, Work: time.Millisecond,
		Clean: 3 * time.Second, Stress: 4 * time.Second, Recovery: 3 * time.Second, Out: out}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cfg.Strategies {
		ss := res.Summary.Strategies[name]
		if ss == nil {
			t.Fatalf("%s: no summary", name)
		}
		if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
			t.Errorf("%s: lost %d, duplicated %d", name, ss.LostJobs, ss.DuplicateJobs)
		}
		// The producer keeps its pace over the run; a loaded machine may
		// hold its ticker for a moment, and the jobs then fall due in the
		// next phase.
		var offered, completed, secs float64
		for _, p := range []string{bench.PhaseClean, bench.PhaseStress, bench.PhaseRecovery} {
			if ps := ss.Phases[p]; ps != nil {
				offered += ps.OfferedPerS * ps.Seconds
				completed += ps.CompletedPerS * ps.Seconds
				secs += ps.Seconds
			}
		}
		if r := offered / secs; r < 150 || r > 250 {
			t.Errorf("%s: offered %.1f/s over the run, want about 200", name, r)
		}
		// Whether a strategy keeps up is a speed, measured by the bench,
		// not asserted here: under the suite's -race -p 3 on 2 cores
		// millrace's clean phase once ran at 74/s, and a whole run once
		// completed 1,548 of 2,256 offered (69%) with no job lost and every
		// phase progressing. A stall is what this test catches: each phase
		// must make progress, and the run must complete something.
		if completed <= 0 {
			t.Errorf("%s: completed nothing of %.0f offered over the run", name, offered)
		}
		for _, p := range []string{bench.PhaseClean, bench.PhaseStress, bench.PhaseRecovery} {
			ps := ss.Phases[p]
			if ps == nil {
				t.Fatalf("%s: no %s phase", name, p)
			}
			if ps.CompletedPerS < 40 {
				t.Errorf("%s %s: completed %.1f/s of about 200 offered", name, p, ps.CompletedPerS)
			}
			if ps.ClaimP50MS <= 0 || ps.E2EP50MS <= 0 {
				t.Errorf("%s %s: no latency recorded: %+v", name, p, ps)
			}
		}
		if got := ss.Phases[bench.PhaseStress].XminAgeMaxS; got < 2.5 {
			t.Errorf("%s: stress xmin age max %.1fs, want the idle transaction's age (>= 2s)", name, got)
		}
		if got := ss.Phases[bench.PhaseRecovery].XminAgeMaxS; got > 1 {
			t.Errorf("%s: recovery xmin age max %.1fs, want ~0 once released", name, got)
		}
		if ss.Phases[bench.PhaseStress].DeadTuplesMax == 0 && name == "skiplocked" {
			t.Errorf("skiplocked: no dead tuples seen in stress")
		}
		if name == "millrace" {
			for p, ps := range ss.Phases {
				if ps.DeadTuplesMax != 0 {
					t.Errorf("millrace %s: %d dead tuples at most, want 0 (the dead-tuple contract)", p, ps.DeadTuplesMax)
				}
			}
		}
		for p, ps := range ss.Phases {
			if ps.StorageBytesMax <= 0 {
				t.Errorf("%s %s: storage_bytes_max %d", name, p, ps.StorageBytesMax)
			}
			if rotates := name == "millrace"; (ps.Rotations != nil) != rotates {
				t.Errorf("%s %s: rotations %v", name, p, ps.Rotations)
			}
		}
	}

	// The summary names the server the run measured (MILLRACE_PG's
	// major version when it is set).
	if major, _ := pgcluster.Major(); major != 0 && !strings.HasPrefix(res.Summary.PostgresVersion, fmt.Sprint(major)+".") {
		t.Errorf("summary's postgres_version %q, want %d.x (MILLRACE_PG)", res.Summary.PostgresVersion, major)
	}

	// summary.json carries exactly the documented fields.
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "postgres_version", "rate", "workers", "work_ms", "strategies"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("summary.json lacks %q", k)
		}
	}
	phase := doc["strategies"].(map[string]any)["skiplocked"].(map[string]any)["phases"].(map[string]any)["stress"].(map[string]any)
	var keys []string
	for k := range phase {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"backlog_end", "backlog_max", "claim_p50_ms", "claim_p99_ms", "completed", "completed_per_s", "dead_tuples_max",
		"e2e_p50_ms", "e2e_p99_ms", "expected", "offered", "offered_per_s", "pg_cpu_pct", "seconds", "storage_bytes_max", "wal_bytes_per_job",
		"xmin_age_max_s"}
	if len(keys) != len(want) {
		t.Errorf("phase fields = %v, want %v", keys, want)
	}
	for i := range want {
		if i < len(keys) && keys[i] != want[i] {
			t.Errorf("phase fields = %v, want %v", keys, want)
			break
		}
	}

	// timeseries.jsonl: one line per strategy per second, in phase order.
	f, err := os.Open(filepath.Join(out, "timeseries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A sample is the second it was read at (T = 1, 2, ...), each once, in
	// order, for as long as the run lasted: about the schedule's 10 s (a
	// read slowed past the end may drop the last), and longer when a
	// loaded machine slows the stress's start or the producer's stop (12
	// under the suite's -race -p 3), so the count has no upper bound; its
	// seconds have no gap and no repeat.
	lines := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s bench.Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		lines[s.Strategy]++
		if s.T != float64(lines[s.Strategy]) {
			t.Errorf("%s: sample %d read at second %v; want one a second, in order", s.Strategy, lines[s.Strategy], s.T)
		}
		if s.Phase == bench.PhaseStress && s.XminHolder == "" {
			t.Errorf("stress sample without a horizon holder: %+v", s)
		}
	}
	for _, name := range cfg.Strategies {
		if n := lines[name]; n < 8 {
			t.Errorf("%s: %d samples, want about one for each second of the 10 s schedule", name, n)
		}
	}
}

// TestRunBurndown inserts jobs first and works them down.
func TestRunBurndown(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	cfg := bench.Config{URL: url, Strategies: []string{"millrace", "skiplocked-batch"}, Scenario: bench.ScenarioBurndown,
		Jobs: 3000, Workers: 8, Out: t.TempDir()}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cfg.Strategies {
		ss := res.Summary.Strategies[name]
		ps := ss.Phases[bench.PhaseBurndown]
		if ps == nil {
			t.Fatalf("%s: no burndown phase: %+v", name, ss)
		}
		if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
			t.Errorf("%s: lost %d, duplicated %d", name, ss.LostJobs, ss.DuplicateJobs)
		}
		if ps.CompletedPerS <= 0 || ps.Seconds <= 0 {
			t.Errorf("%s: burndown %+v", name, ps)
		}
		if got := ps.CompletedPerS * ps.Seconds; got < 2990 || got > 3010 {
			t.Errorf("%s: completed/s x seconds = %.0f, want 3000", name, got)
		}
		if ps.BacklogEnd != 0 {
			t.Errorf("%s: backlog at the end of the burndown = %d, want 0", name, ps.BacklogEnd)
		}
	}
	if res.Summary.Rate != nil {
		t.Errorf("burndown rate = %v, want none", res.Summary.Rate)
	}
}

// TestRunProcesses works a burndown down with 6 workers in 3 processes
// and checks per_process_completed: one count per process, adding up to the
// jobs, and for a classic strategy (whose workers poll) every process busy.
func TestRunProcesses(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	out := t.TempDir()
	cfg := bench.Config{URL: url, Strategies: []string{"millrace", "skiplocked-batch"}, Scenario: bench.ScenarioBurndown,
		Jobs: 3000, Workers: 6, Processes: 3, Work: time.Millisecond, Out: out}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Processes != 3 {
		t.Errorf("summary processes = %d, want 3", res.Summary.Processes)
	}
	for _, name := range cfg.Strategies {
		ss := res.Summary.Strategies[name]
		if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
			t.Errorf("%s: lost %d, duplicated %d", name, ss.LostJobs, ss.DuplicateJobs)
		}
		per := ss.PerProcessCompleted
		if len(per) != 3 {
			t.Fatalf("%s: per_process_completed = %v, want 3 counts", name, per)
		}
		var sum int64
		for _, n := range per {
			sum += n
		}
		if sum != 3000 {
			t.Errorf("%s: per_process_completed = %v, adds up to %d, want 3000", name, per, sum)
		}
		if !strings.HasPrefix(name, "millrace") {
			for i, n := range per {
				if n == 0 {
					t.Errorf("%s: process %d completed nothing: %v", name, i, per)
				}
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"per_process_completed": [`) {
		t.Errorf("summary.json lacks per_process_completed:\n%s", raw)
	}
}

// TestRunStall runs millrace through a short stall scenario: the long job
// runs through the stress phase, the transaction that enqueued at its start
// stays open to its end (holding the horizon), the unserved queue's jobs
// are all worked by the drain after the run, and nothing is lost.
func TestRunStall(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	out := t.TempDir()
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioStall,
		Rate: 100, Workers: 4, Work: time.Millisecond,
		Clean: 2 * time.Second, Stress: 4 * time.Second, Recovery: 2 * time.Second, Out: out}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Summary.Strategies["millrace"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, duplicated %d", ss.LostJobs, ss.DuplicateJobs)
	}
	st := ss.Stall
	if st == nil {
		t.Fatal("no stall figures")
	}
	if st.LongJobS < 3.5 || st.LongJobS > 6 {
		t.Errorf("the long job ran %.1fs, want the stress phase's 4s", st.LongJobS)
	}
	if st.HeldTxS < 3.5 || st.HeldTxS > 6 {
		t.Errorf("the transaction was held %.1fs, want the stress phase's 4s", st.HeldTxS)
	}
	// The unserved queue gets its rate on a fixed schedule for as long as
	// the held transaction is open (both start with the stress phase and
	// end with its release): judged against that time, not the phase's
	// nominal 4 s, which a loaded machine overruns (a clean-clone CI run:
	// 29 jobs, the bar then 15-25).
	if want := bench.StallUnservedRate * st.HeldTxS; math.Abs(float64(st.UnservedEnqueued)-want) > 2+0.1*want {
		t.Errorf("%d jobs on the unserved queue in the %.1f s the transaction was held, want about %.0f", st.UnservedEnqueued, st.HeldTxS, want)
	}
	if st.UnservedWorked != st.UnservedEnqueued {
		t.Errorf("the drain worked %d of the unserved queue's %d jobs", st.UnservedWorked, st.UnservedEnqueued)
	}
	stress := ss.Phases[bench.PhaseStress]
	if stress.XminAgeMaxS < 2.5 {
		t.Errorf("stress xmin age max %.1fs, want the held transaction's", stress.XminAgeMaxS)
	}
	if stress.StorageBytesMax <= 0 || stress.Rotations == nil {
		t.Errorf("stress storage %d, rotations %v", stress.StorageBytesMax, stress.Rotations)
	}
	if c := ss.Phases[bench.PhaseClean]; c.OfferedPerS < 75 || stress.CompletedPerS < 75 {
		t.Errorf("the main stream: clean offered %.0f/s, stress completed %.0f/s; want about 100", c.OfferedPerS, stress.CompletedPerS)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"stall": {`, `"unserved_worked": `, `"rotations": `} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("summary.json lacks %s", k)
		}
	}
}

// singleProcess is a strategy that does not say it can run as several
// processes.
type singleProcess struct{ bench.Strategy }

func init() {
	bench.Register("test-single-process", func() bench.Strategy {
		f, _ := bench.Lookup("skiplocked")
		return singleProcess{f()}
	})
}

// ownDefaults is skiplocked with a worker count of its own and a library
// that reports its own pickup latency (a constant, so the summary's figure
// can be checked): what the river strategy declares.
type ownDefaults struct {
	bench.Strategy
	workers chan int // receives the Env.Workers that Work was given
}

const ownDefaultWorkers, ownPickup = 3, 7 * time.Millisecond

func (s ownDefaults) DefaultWorkers() int { return ownDefaultWorkers }

func (s ownDefaults) Work(ctx context.Context, env bench.Env) error {
	s.workers <- env.Workers
	handle := env.Handle
	env.Handle = func(ctx context.Context, j bench.Job) error {
		env.ObservePickup(ownPickup)
		return handle(ctx, j)
	}
	return s.Strategy.Work(ctx, env)
}

var ownDefaultsWorkers = make(chan int, 4)

func init() {
	bench.Register("test-own-defaults", func() bench.Strategy {
		f, _ := bench.Lookup("skiplocked")
		return ownDefaults{f(), ownDefaultsWorkers}
	})
}

// TestRunStrategyDefaults: without --workers each strategy runs its own
// default worker count (and the summary says so); a pickup latency the
// strategy reports reaches the summary, and is left out for a strategy
// that reports none.
func TestRunStrategyDefaults(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	cfg := bench.Config{URL: url, Strategies: []string{"test-own-defaults", "skiplocked"}, Scenario: bench.ScenarioClean,
		Rate: 100, Work: time.Millisecond, Clean: 2 * time.Second, Out: t.TempDir()}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-ownDefaultsWorkers; got != ownDefaultWorkers {
		t.Errorf("Work was given %d workers, want the strategy's own default %d", got, ownDefaultWorkers)
	}
	own, plain := res.Summary.Strategies["test-own-defaults"], res.Summary.Strategies["skiplocked"]
	if own.Workers != ownDefaultWorkers || plain.Workers != bench.DefaultWorkers {
		t.Errorf("summary workers: %d and %d, want %d and %d", own.Workers, plain.Workers, ownDefaultWorkers, bench.DefaultWorkers)
	}
	if res.Summary.Workers != 0 {
		t.Errorf("summary workers %d without --workers, want 0", res.Summary.Workers)
	}
	p := own.Phases[bench.PhaseClean]
	if want := float64(ownPickup / time.Millisecond); p.PickupP50MS < want*0.99 || p.PickupP99MS > want*1.01 {
		t.Errorf("pickup p50/p99 %.3f/%.3f ms, want %.0f", p.PickupP50MS, p.PickupP99MS, want)
	}
	if q := plain.Phases[bench.PhaseClean]; q.PickupP50MS != 0 || q.PickupP99MS != 0 {
		t.Errorf("skiplocked reports no pickup latency of its own, got %.3f/%.3f ms", q.PickupP50MS, q.PickupP99MS)
	}
	c := cfg
	c.Processes = ownDefaultWorkers + 1
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "runs by default") {
		t.Errorf("--processes above the strategy's default workers: %v", err)
	}
}

// TestRunRejectsBadConfig checks errors name the problem before anything runs.
func TestRunRejectsBadConfig(t *testing.T) {
	base := bench.Config{URL: "postgres://127.0.0.1:1/x", Strategies: []string{"skiplocked"}, Scenario: bench.ScenarioClean,
		Rate: 10, Workers: 1, Clean: time.Second, Out: t.TempDir()}
	cases := map[string]func(c *bench.Config){
		"unknown scenario":    func(c *bench.Config) { c.Scenario = "nope" },
		"unknown strategy":    func(c *bench.Config) { c.Strategies = []string{"nope"} },
		"workers":             func(c *bench.Config) { c.Workers = -1 },
		"all phases zero":     func(c *bench.Config) { c.Clean = 0 },
		"burndown no jobs":    func(c *bench.Config) { c.Scenario = bench.ScenarioBurndown },
		"processes > workers": func(c *bench.Config) { c.Workers, c.Processes = 2, 3 },
		"single process":      func(c *bench.Config) { c.Strategies, c.Workers, c.Processes = []string{"test-single-process"}, 4, 2 },
		"stall classic":       func(c *bench.Config) { c.Scenario = bench.ScenarioStall },
		"mix classic":         func(c *bench.Config) { c.Mix = bench.Mix{Fail: 10} },
		"mix rate max":        func(c *bench.Config) { c.Strategies, c.Rate, c.Mix = []string{"millrace"}, 0, bench.Mix{Fail: 10} },
		"mix unique > sched":  func(c *bench.Config) { c.Strategies, c.Mix = []string{"millrace"}, bench.Mix{Unique: 10} },
	}
	for name, mod := range cases {
		c := base
		mod(&c)
		if _, err := bench.Run(context.Background(), c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c := base
	c.Strategies, c.Workers, c.Processes = []string{"test-single-process"}, 4, 2
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), `"test-single-process" runs as one process only`) {
		t.Errorf("single-process strategy with --processes 2: %v", err)
	}
	c = base
	c.Scenario = bench.ScenarioStall
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), `"skiplocked" cannot run the stall scenario`) {
		t.Errorf("skiplocked in the stall scenario: %v", err)
	}
	c = base
	c.Mix = bench.Mix{Cancel: 5}
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), `"skiplocked" cannot run --mix`) || !strings.Contains(err.Error(), "millrace supports it") {
		t.Errorf("skiplocked with --mix: %v", err)
	}
}

// acceptance skips the long acceptance runs unless
// MILLRACE_BENCH_ACCEPTANCE=1: they take minutes and are meant for the
// millrace storage protocol v3 (fair bulk sharing, rotation that waits on no
// consumer), not for every test run.
func acceptance(t *testing.T) {
	t.Helper()
	if os.Getenv("MILLRACE_BENCH_ACCEPTANCE") != "1" {
		t.Skip("set MILLRACE_BENCH_ACCEPTANCE=1 to run the bench's acceptance runs (minutes each)")
	}
}

// acceptFor is how long an acceptance run lasts: def, or
// MILLRACE_ACCEPT_FOR (a Go duration) for a shorter try.
func acceptFor(t *testing.T, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv("MILLRACE_ACCEPT_FOR")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("MILLRACE_ACCEPT_FOR=%q: want a positive Go duration", v)
	}
	return d
}

// TestAcceptanceProcesses is `millrace bench --strategies millrace
// --scenario burndown --jobs 200000 --work 1ms --processes 4`: every
// process completes between 15% and 35% of the jobs.
func TestAcceptanceProcesses(t *testing.T) {
	acceptance(t)
	url := testkit.EmptyDBURL(t)
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioBurndown,
		Jobs: 200000, Workers: 32, Processes: 4, Work: time.Millisecond, Out: t.TempDir()}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Summary.Strategies["millrace"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, duplicated %d", ss.LostJobs, ss.DuplicateJobs)
	}
	for i, n := range ss.PerProcessCompleted {
		if share := float64(n) / float64(cfg.Jobs); share < 0.15 || share > 0.35 {
			t.Errorf("process %d completed %d jobs (%.1f%%), want 15%% to 35%%: %v", i, n, 100*share, ss.PerProcessCompleted)
		}
	}
}

// TestAcceptanceStall is `millrace bench --strategies millrace --scenario
// stall --rate 800 --clean 30s --stress 5m --recovery 30s`: with the three
// stall sources active, storage in stress stays within twice the clean
// phase's and rotations keep their clean cadence (at least half of it).
func TestAcceptanceStall(t *testing.T) {
	acceptance(t)
	url := testkit.EmptyDBURL(t)
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioStall,
		Rate: 800, Workers: 32, Work: 10 * time.Millisecond,
		Warmup: 5 * time.Second, Clean: 30 * time.Second, Stress: 5 * time.Minute, Recovery: 30 * time.Second, Out: t.TempDir()}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Summary.Strategies["millrace"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, duplicated %d", ss.LostJobs, ss.DuplicateJobs)
	}
	clean, stress := ss.Phases[bench.PhaseClean], ss.Phases[bench.PhaseStress]
	// The queue's storage, sample by sample: storage less history, which
	// keeps every finished attempt for its retention (24 h) and so grows
	// with the phase's length whatever pins the horizon.
	queueMax := map[string]int64{}
	for _, smp := range res.Samples {
		if smp.Strategy == "millrace" {
			queueMax[smp.Phase] = max(queueMax[smp.Phase], smp.StorageBytes-smp.HistoryBytes)
		}
	}
	if c, st := queueMax[bench.PhaseClean], queueMax[bench.PhaseStress]; c == 0 || st > 2*c {
		t.Errorf("queue storage max (history aside): stress %d bytes, clean %d: more than twice", st, c)
	}
	t.Logf("storage max with history: clean %d, stress %d; without: clean %d, stress %d",
		clean.StorageBytesMax, stress.StorageBytesMax, queueMax[bench.PhaseClean], queueMax[bench.PhaseStress])
	if clean.Rotations == nil || stress.Rotations == nil || *clean.Rotations == 0 {
		t.Fatalf("rotations: clean %v, stress %v", clean.Rotations, stress.Rotations)
	}
	cleanRate := float64(*clean.Rotations) / clean.Seconds
	stressRate := float64(*stress.Rotations) / stress.Seconds
	if stressRate < cleanRate/2 {
		t.Errorf("rotations: %d in %.0fs of stress, %d in %.0fs clean: the cadence fell by more than half",
			*stress.Rotations, stress.Seconds, *clean.Rotations, clean.Seconds)
	}
	if ss.Stall.UnservedWorked != ss.Stall.UnservedEnqueued {
		t.Errorf("the drain worked %d of %d unserved jobs", ss.Stall.UnservedWorked, ss.Stall.UnservedEnqueued)
	}
}

// TestRunMetrics runs millrace with its Prometheus metrics in two
// processes and checks that summary.json's metric totals equal the
// bench's own counts.
func TestRunMetrics(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	out := t.TempDir()
	reg := prometheus.NewRegistry()
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioClean,
		Rate: 200, Workers: 4, Processes: 2, Work: time.Millisecond,
		Warmup: time.Second, Clean: 3 * time.Second, Out: out, Metrics: reg}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Summary.Strategies["millrace"]
	tot, m := ss.Totals, ss.Metrics
	// Jobs left unworked when the workers stop (a loaded machine leaves
	// some) are backlog: both sides count only what happened.
	if tot == nil || tot.Enqueued < 500 || tot.Completed < 1 {
		t.Fatalf("totals = %+v, want about 800 enqueued and some completed", tot)
	}
	for k, want := range map[string]int64{
		`millrace_jobs_inserted_total{queue="default"}`:                    tot.Enqueued,
		`millrace_job_outcomes_total{queue="default",outcome="completed"}`: tot.Completed,
		`millrace_job_outcomes_total{queue="default",outcome="failed"}`:    0,
		`millrace_job_wait_seconds_count{queue="default"}`:                 tot.Completed,
		`millrace_job_run_seconds_count{queue="default"}`:                  tot.Completed,
		`millrace_jobs_duplicate_inserts_total{queue="default"}`:           0,
		`millrace_job_outcomes_total{queue="default",outcome="discarded"}`: 0,
		`millrace_job_outcomes_total{queue="default",outcome="cancelled"}`: 0,
		`millrace_job_outcomes_total{queue="default",outcome="snoozed"}`:   0,
	} {
		if got, ok := m[k]; !ok || got != float64(want) {
			t.Errorf("metrics[%s] = %v (present %v), want %d", k, got, ok, want)
		}
	}
	// Every completed job was claimed. A process that stops first gives back
	// the jobs it had claimed and not started (Stop releases them), and the
	// other process may claim them again: claims may exceed completions by
	// what the processes' buffers held, a few jobs per worker at most.
	const claimed = `millrace_claim_batch_size_sum{queue="default"}`
	if got, ok := m[claimed]; !ok || got < float64(tot.Completed) || got > float64(tot.Completed)+float64(4*cfg.Workers) {
		t.Errorf("metrics[%s] = %v (present %v), want %d to %d (completed, plus jobs released at stop and claimed again)",
			claimed, got, ok, tot.Completed, tot.Completed+int64(4*cfg.Workers))
	}
	// Every job worked was claimed (a job claimed as the workers stopped
	// may be released unworked).
	if got := m[`millrace_claim_batch_size_sum{queue="default"}`]; got < float64(tot.Completed) {
		t.Errorf("jobs claimed %v < completed %d", got, tot.Completed)
	}
	// Work took about 1 ms a job.
	if n, s := m[`millrace_job_run_seconds_count{queue="default"}`], m[`millrace_job_run_seconds_sum{queue="default"}`]; n == 0 || s/n < 0.0009 || s/n > 0.5 {
		t.Errorf("mean run time %v s over %v jobs, want about 1 ms", s/n, n)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"totals": {`, `"metrics": {`, `"millrace_jobs_inserted_total{queue=\"default\"}": `} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("summary.json lacks %s", k)
		}
	}
}

// TestRunMix runs the millrace strategy with every kind of the mix and
// checks the accounting: per phase, every job that should run completed
// (the drain after the run lets the last scheduled ones fall due), the
// cancelled and de-duplicated shares are out of what should run, and no
// defect, lost job or duplicate.
func TestRunMix(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	out := t.TempDir()
	mix, err := bench.ParseMix("fail=20,snooze=5,cancel=5,sched=20,unique=10")
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioIdleXid,
		Rate: 200, Workers: 4, Work: time.Millisecond, Mix: mix, MixSchedMax: 2 * time.Second,
		Clean: 3 * time.Second, Stress: 3 * time.Second, Recovery: 2 * time.Second, Out: out}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.MixDefects(); d != "" {
		t.Errorf("defects: %s", d)
	}
	ss := res.Summary.Strategies["millrace"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, duplicated %d", ss.LostJobs, ss.DuplicateJobs)
	}
	if m := ss.Mix; m == nil || m.DrainPending != 0 || m.CancelMissed != 0 || m.UniqueNotDeduplicated != 0 || m.SchedEarly != 0 {
		t.Errorf("mix stats: %+v", m)
	}
	var cancelled, deduped int64
	for _, p := range []string{bench.PhaseClean, bench.PhaseStress, bench.PhaseRecovery} {
		ps := ss.Phases[p]
		if ps == nil || ps.Cancelled == nil || ps.SchedLateP99MS == nil || ps.UniqueDupesRun == nil || ps.CancelledRun == nil {
			t.Fatalf("%s: mix fields missing: %+v", p, ps)
		}
		// The producer keeps pace but for a second at the phase's edge (a
		// loaded machine may hold its ticker that long).
		if ps.Offered < int64(150*(ps.Seconds-1)) {
			t.Errorf("%s: offered %d in %.0fs at 200/s", p, ps.Offered, ps.Seconds)
		}
		if ps.Expected != ps.Offered-*ps.Cancelled-*ps.Deduplicated {
			t.Errorf("%s: expected %d, offered %d, cancelled %d, de-duplicated %d", p, ps.Expected, ps.Offered, *ps.Cancelled, *ps.Deduplicated)
		}
		if ps.Completed != ps.Expected {
			t.Errorf("%s: completed %d of %d expected", p, ps.Completed, ps.Expected)
		}
		cancelled += *ps.Cancelled
		deduped += *ps.Deduplicated
	}
	// 5% cancelled and 10% de-duplicated, up to the blocks of 100.
	if all := res.Summary.Strategies["millrace"].Phases[bench.PhaseStress].Offered; cancelled < 20 || deduped < 40 {
		t.Errorf("cancelled %d, de-duplicated %d over three phases (stress offered %d)", cancelled, deduped, all)
	}
	if ps := ss.Phases[bench.PhaseStress]; *ps.SchedLateP99MS <= 0 || *ps.RetryLateP99MS <= 0 {
		t.Errorf("stress: sched late p99 %v ms, retry late p99 %v ms: not recorded", *ps.SchedLateP99MS, *ps.RetryLateP99MS)
	}

	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Mix        map[string]int `json:"mix"`
		Strategies map[string]struct {
			Phases map[string]map[string]any `json:"phases"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Mix["unique"] != 10 || doc.Mix["sched"] != 20 {
		t.Errorf("summary.json mix = %v", doc.Mix)
	}
	stress := doc.Strategies["millrace"].Phases["stress"]
	for _, k := range []string{"offered", "expected", "completed", "cancelled", "deduplicated", "sched_late_p99_ms", "sched_late_max_ms",
		"retry_late_p99_ms", "cancelled_run", "unique_dupes_run"} {
		if _, ok := stress[k]; !ok {
			t.Errorf("summary.json stress phase lacks %q", k)
		}
	}
}

// TestRunAnalyticsReaders runs the analytics scenario with short
// overlapping readers, without and with a guard that lets one reader run at
// a time, and checks the reports: without the guard none is refused and
// every report begun in time finishes; with it, readers are refused,
// retried and still finish. By default the readers hold a transaction id (seen in
// pg_stat_activity.backend_xid), so overlapping readers hold the horizon
// longer than one report; read-only readers (--reader-readonly) hold none
// and never hold it longer than one report.
func TestRunAnalyticsReaders(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	base := bench.Config{URL: url, Strategies: []string{"skiplocked"}, Scenario: bench.ScenarioAnalytics,
		Rate: 100, Workers: 2, Work: time.Millisecond,
		Clean: 2 * time.Second, Stress: 12 * time.Second, Recovery: 2 * time.Second,
		Analytics: bench.Analytics{Readers: 3, Duration: 2 * time.Second, Interval: time.Second}}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// watch counts, while the run lasts, the samples in which an analytics
	// reader was open and those in which one held a transaction id.
	watch := func(ctx context.Context) (open, withXid *int, done chan struct{}) {
		open, withXid, done = new(int), new(int), make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(200 * time.Millisecond) // one sample per tick
			defer tick.Stop()
			for {
				var n, x int
				if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state <> 'idle'), count(backend_xid)
				  FROM pg_stat_activity WHERE application_name = $1`, bench.AppAnalytics).Scan(&n, &x); err == nil {
					if n > 0 {
						*open++
					}
					if x > 0 {
						*withXid++
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
		return open, withXid, done
	}
	// check runs cfg and checks its reports; the stress phase's horizon
	// must have been at most maxAge old (and at least minAge). It returns
	// the reports and the horizon's typical age over the stress phase's
	// samples (the sampler's xmin_age_s, one a second; see below).
	// check runs cfg and returns the readers' figures and the share of the
	// stress phase's steady samples (from the third) whose horizon is
	// older than one report and half a second (2.5 s).
	check := func(t *testing.T, cfg bench.Config, minAge, maxAge float64) (*bench.ReaderStats, float64) {
		t.Helper()
		cfg.Out = t.TempDir()
		ctx, stop := context.WithCancel(context.Background())
		open, withXid, done := watch(ctx)
		res, err := bench.Run(context.Background(), cfg)
		stop()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("samples with a reader open: %d, with a reader holding an xid: %d", *open, *withXid)
		switch {
		case *open == 0:
			t.Errorf("no analytics reader seen in pg_stat_activity")
		case cfg.Analytics.ReadOnly && *withXid > 0:
			t.Errorf("a read-only reader held a transaction id in %d samples", *withXid)
		case !cfg.Analytics.ReadOnly && *withXid*2 < *open:
			t.Errorf("readers held a transaction id in %d of %d samples, want most", *withXid, *open)
		}
		ss := res.Summary.Strategies["skiplocked"]
		if ss.LostJobs != 0 {
			t.Errorf("lost %d jobs", ss.LostJobs)
		}
		r := ss.Phases[bench.PhaseStress].Readers
		if r == nil || ss.Readers == nil || *r != *ss.Readers {
			t.Fatalf("stress phase readers %+v, run %+v", r, ss.Readers)
		}
		t.Logf("readers: %+v; stress xmin age max %.1fs", *r, ss.Phases[bench.PhaseStress].XminAgeMaxS)
		for name, ps := range ss.Phases {
			if name != bench.PhaseStress && ps.Readers != nil {
				t.Errorf("readers reported in the %s phase", name)
			}
		}
		if r.Sessions != 3 || r.DurationS != 2 || r.IntervalS != 1 {
			t.Errorf("settings: %+v", r)
		}
		if r.Reports != r.Finished+r.Unfinished || r.Unfinished > 3 {
			t.Errorf("reports %d != finished %d + unfinished %d (at most one per session)", r.Reports, r.Finished, r.Unfinished)
		}
		if r.Started != r.Reports+r.Retried {
			t.Errorf("attempts %d != reports %d + retries %d", r.Started, r.Reports, r.Retried)
		}
		if r.Cancelled-r.Retried > r.Unfinished {
			t.Errorf("%d refused attempts were not retried, but only %d reports were cut off by the phase end", r.Cancelled-r.Retried, r.Unfinished)
		}
		if x := ss.Phases[bench.PhaseStress].XminAgeMaxS; x < minAge || x > maxAge {
			t.Errorf("stress xmin age max %.1fs, want %g-%gs", x, minAge, maxAge)
		}
		// The horizon over the phase is judged by its samples from the
		// third on (the readers start in the first two, before
		// overlapping ones have chained their snapshots): the share of
		// them older than one report (2 s) and half a second. Chained
		// readers hold it 3 to 4 s old; one report at a time, never
		// past a report and a poll. A mean or a median depended on where
		// the samples fell in the reports' cycle: with the guard they
		// alternate about 1 and 2 s, and the median landed on either
		// (1.93 s against 3.01 s without: over the half once in two runs).
		var ages []string
		var steady []float64
		for _, s := range res.Samples {
			if s.Strategy == "skiplocked" && s.Phase == bench.PhaseStress {
				ages = append(ages, fmt.Sprintf("%.1f", s.XminAgeS))
				if len(ages) > 2 {
					steady = append(steady, s.XminAgeS)
				}
			}
		}
		if len(steady) == 0 {
			t.Fatal("too few stress samples")
		}
		slices.Sort(steady)
		mean := steady[len(steady)/2]
		if len(steady)%2 == 0 {
			mean = (steady[len(steady)/2-1] + steady[len(steady)/2]) / 2
		}
		old := 0
		for _, a := range steady {
			if a >= 2.5 {
				old++
			}
		}
		share := float64(old) / float64(len(steady))
		t.Logf("stress horizon age each second: %s s; median from the third %.2f s, %.0f%% of them older than 2.5 s", strings.Join(ages, " "), mean, 100*share)
		raw, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), `"readers": {`) || !strings.Contains(string(raw), `"retried": `) {
			t.Errorf("summary.json lacks the stress phase's readers")
		}
		return r, share
	}

	noGuard := func(t *testing.T, cfg bench.Config, minAge, maxAge float64) float64 {
		r, share := check(t, cfg, minAge, maxAge)
		if r.Cancelled != 0 || r.Retried != 0 {
			t.Errorf("readers refused without a guard: %+v", r)
		}
		if r.Finished < 5 {
			t.Errorf("%d reports finished, want at least 5 (three overlapping sessions of 2 s reports over 12 s)", r.Finished)
		}
		if r.ReadOnly != cfg.Analytics.ReadOnly {
			t.Errorf("read_only %v, want %v", r.ReadOnly, cfg.Analytics.ReadOnly)
		}
		return share
	}

	// A report starts every second and reads for 2: each new reader's
	// snapshot has the id of the one started a second (or two) before it
	// as xmin, and keeps it for 2 s, so the horizon reaches 3 to 4 s.
	var withoutShare float64
	t.Run("without guard", func(t *testing.T) { withoutShare = noGuard(t, base, 2.4, 5) })

	// Read-only snapshots do not chain: the horizon held by overlapping
	// readers is never older than one report.
	t.Run("without guard, read-only", func(t *testing.T) {
		cfg := base
		cfg.Analytics.ReadOnly = true
		noGuard(t, cfg, 1, 3.5)
	})

	t.Run("with guard", func(t *testing.T) {
		pol, err := guard.ParsePolicy("window.yaml", []byte(`
interval: 200ms
classes:
  - name: analytics
    match: {application_name: `+bench.AppAnalytics+`}
    max_concurrent: 1
    action: cancel
`))
		if err != nil {
			t.Fatal(err)
		}
		cfg := base
		cfg.Guard = func(ctx context.Context) error { return guard.New(pool, pol, guard.Options{}).Run(ctx) }
		// One report at a time. A retry that starts less than one poll
		// before the running report ends has that report's xid as its
		// xmin: the guard refuses it by that snapshot at its next poll, so
		// the horizon is one report's length, plus a poll and the
		// sampler's second (the bound leaves room for a loaded machine).
		r, share := check(t, cfg, 1, 4.5)
		if r.Cancelled < 1 || r.Retried < 1 {
			t.Errorf("the guard refused no reader: %+v", r)
		}
		if r.Finished < 2 {
			t.Errorf("%d reports finished with the guard, want at least 2 (one at a time)", r.Finished)
		}
		// Without the guard the overlapping readers hold the horizon 3 to
		// 4 s old most of the time; with it, one report at a time, it
		// grows from 0 to 2 s and lets go between reports.
		if withoutShare == 0 {
			t.Skip("no run without the guard to compare with")
		}
		t.Logf("stress horizon older than 2.5 s in %.0f%% of the samples with the guard, %.0f%% without", 100*share, 100*withoutShare)
		// Chained readers hold it older than 2.5 s in most samples on a
		// quiet machine; a loaded one delays some readers' starts and
		// breaks the chain now and then (a clean-clone CI run: 40%).
		// A quarter still says they chained: unchained readers never
		// hold it past one report and a poll.
		if withoutShare < 0.25 {
			t.Errorf("without the guard the horizon was older than 2.5 s in only %.0f%% of the samples: the readers did not chain", 100*withoutShare)
		}
		if share > withoutShare/4 {
			t.Errorf("stress horizon older than 2.5 s in %.0f%% of the samples with the guard, %.0f%% without: want at most a quarter as often", 100*share, 100*withoutShare)
		}
	})
}

// TestRunMixAtMaxRate: the mix works with a producer at full speed
// (--rate max): every kind is offered, the backlog it keeps leaves the
// jobs that wait for their time out, and every expected job completes
// once, none lost.
func TestRunMixAtMaxRate(t *testing.T) {
	url := testkit.EmptyDBURL(t)
	mix, err := bench.ParseMix("fail=20,snooze=5,cancel=5,sched=20,unique=10")
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioClean,
		Workers: 4, Mix: mix, MixSchedMax: 2 * time.Second, Clean: 3 * time.Second, Out: t.TempDir()}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.MixDefects(); d != "" {
		t.Errorf("defects: %s", d)
	}
	ss := res.Summary.Strategies["millrace"]
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, duplicated %d", ss.LostJobs, ss.DuplicateJobs)
	}
	if m := ss.Mix; m == nil || m.DrainPending != 0 || m.UniqueNotDeduplicated != 0 || m.SchedEarly != 0 {
		t.Errorf("mix stats: %+v", m)
	}
	ps := ss.Phases[bench.PhaseClean]
	if ps == nil || ps.Cancelled == nil || ps.Deduplicated == nil {
		t.Fatalf("clean: mix fields missing: %+v", ps)
	}
	if ps.Offered < 1000 || *ps.Cancelled == 0 || *ps.Deduplicated == 0 {
		t.Errorf("clean: offered %d, cancelled %d, de-duplicated %d: want every kind at full speed", ps.Offered, *ps.Cancelled, *ps.Deduplicated)
	}
	if ps.Expected != ps.Offered-*ps.Cancelled-*ps.Deduplicated || ps.Completed != ps.Expected {
		t.Errorf("clean: offered %d, cancelled %d, de-duplicated %d, expected %d, completed %d",
			ps.Offered, *ps.Cancelled, *ps.Deduplicated, ps.Expected, ps.Completed)
	}
	// The producer's bound (2,000 jobs here) holds with its 32 goroutines:
	// the backlog is that and the jobs waiting for their time, not a batch
	// of 500 more per goroutine.
	t.Logf("clean: backlog max %d", ps.BacklogMax)
	if ps.BacklogMax > 4000 {
		t.Errorf("clean: backlog max %d, want at most 4,000 (the producer's bound of 2,000 and the jobs waiting for their time)", ps.BacklogMax)
	}
}
