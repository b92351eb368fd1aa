package bench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/testkit"
)

// TestRunChaos runs the chaos scenario compressed: three worker processes
// with 2 s process and 1 s leader leases, a mix, 10 s of stress in which
// one process is killed, the leader stopped past its leases, the backends
// terminated, the cluster (a server of the test's own) restarted, two
// poison jobs crash their processes and a unique job's transaction stays
// open 2 s. Nothing is lost, stranded or run twice outside a crash
// window; each poison job runs at most its attempts and is discarded.
func TestRunChaos(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL is set: this test restarts a server of its own")
	}
	ctx := context.Background()
	c, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	url, err := c.CreateDatabase(ctx, "chaos")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t.Setenv("MILLRACE_BENCH_LOG", "info") // the worker processes' log, shown if the test fails
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioChaos,
		Rate: 100, Workers: 6, Processes: 3, Work: time.Millisecond,
		Mix: bench.Mix{Fail: 10, Snooze: 5, Cancel: 5, Sched: 10, Unique: 5}, MixSchedMax: 2 * time.Second,
		Clean: time.Second, Stress: 10 * time.Second, Recovery: 10 * time.Second, Out: out,
		Chaos:   bench.ChaosOptions{Leases: bench.Leases{Process: 2 * time.Second, Leader: time.Second}, Hold: 2 * time.Second, Poison: 1},
		Restart: func(ctx context.Context) error { return c.Restart(ctx, testkit.Options{}) }}
	defer func() {
		if t.Failed() {
			// What the worker processes said: warnings and errors, for the
			// reason of a failure that does not come back on a quiet machine.
			b, _ := os.ReadFile(filepath.Join(out, "chaos-processes.log"))
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "level=") {
					t.Log(l)
				}
			}
		}
	}()
	began := time.Now()
	res, err := bench.Run(ctx, cfg)
	t.Logf("the run took %s", time.Since(began).Round(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ss := res.Summary.Strategies["millrace"]
	ch := ss.Chaos
	if ch == nil {
		t.Fatal("no chaos figures")
	}
	t.Logf("chaos: %+v", *ch)
	for _, f := range ch.Faults {
		r := "-"
		if f.RecoverS != nil {
			r = fmt.Sprint(*f.RecoverS)
		}
		t.Logf("fault %s %s at %.1fs for %.1fs, recovered in %ss %s", f.Kind, f.Target, f.AtS, f.DurationS, r, f.Note)
	}
	if ss.LostJobs != 0 || ch.Lost != 0 || ch.Stranded != 0 || ch.Duplicated != 0 {
		t.Errorf("lost %d (%d), stranded %d, duplicated outside a crash window %d", ss.LostJobs, ch.Lost, ch.Stranded, ch.Duplicated)
	}
	kinds := map[string]bool{}
	for _, f := range ch.Faults {
		kinds[f.Kind] = true
	}
	for _, k := range []string{"open-tx", "poison", "kill", "stop", "terminate", "restart", "crash"} {
		if !kinds[k] {
			t.Errorf("no %s fault", k)
		}
	}
	if len(ch.Poison) != 1 {
		t.Fatalf("%d poison jobs, want 1", len(ch.Poison))
	}
	for _, p := range ch.Poison {
		if p.Runs < 1 || p.Runs > bench.ChaosPoisonAttempts || !p.Discarded {
			t.Errorf("poison job %d ran %d times (at most %d) and is %s, want discarded", p.ID, p.Runs, bench.ChaosPoisonAttempts, p.State)
		}
	}
	if ch.OpenTx == nil || !ch.OpenTx.Committed || !ch.OpenTx.Ran {
		t.Errorf("the open transaction: %+v, want committed and its job run", ch.OpenTx)
	}
	if ch.Restart != "restarted" || ch.StorageMaxBytes <= 0 || ch.Spawned < 4 {
		t.Errorf("restart %q, storage max %d, processes spawned %d", ch.Restart, ch.StorageMaxBytes, ch.Spawned)
	}
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"chaos": {`, `"lost": `, `"duplicated": `, `"crash_duplicated": `, `"stranded": `, `"poison_max_runs": `,
		`"recover_s": `, `"storage_max_bytes": `} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("summary.json lacks %s", k)
		}
	}
}
