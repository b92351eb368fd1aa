package bench

import (
	"strings"
	"testing"
)

// TestVerdict: the run in one line, from its figures: who held the
// offered rate in the stress phase and with how many dead tuples, how far
// the others fell, each strategy's rate without an offered one, and lost
// jobs; and the closing table prints it, with why each strategy ran the
// workers it ran (32 beside 2,000 looked unfair without the reason).
func TestVerdict(t *testing.T) {
	phase := func(done, offered float64, dead int64) map[string]*PhaseSummary {
		return map[string]*PhaseSummary{
			PhaseClean:  {CompletedPerS: offered, OfferedPerS: offered},
			PhaseStress: {CompletedPerS: done, OfferedPerS: offered, DeadTuplesMax: dead},
		}
	}
	sum := &Summary{Rate: float64(800), Strategies: map[string]*StrategySummary{
		"millrace":   {Workers: GoroutineWorkers, Phases: phase(799.6, 800, 0)},
		"skiplocked": {Workers: DefaultWorkers, Phases: phase(352, 800, 101830)},
		"que":        {Workers: DefaultWorkers, Phases: phase(170.2, 800, 40268), LostJobs: 2},
	}}
	want := "In the stress phase millrace held 800/800 jobs/s with 0 dead tuples, while skiplocked fell to 352/800 with 101,830 dead tuples " +
		"and que fell to 170/800 with 40,268 dead tuples; que lost 2 jobs."
	if got := Verdict(sum); got != want {
		t.Errorf("verdict:\n got %s\nwant %s", got, want)
	}
	var b strings.Builder
	WriteTable(&b, sum, false)
	for _, line := range []string{want,
		"workers: millrace 2000 (" + WhyGoroutineWorkers + "), que 32 (" + WhyDefaultWorkers + "), skiplocked 32 (" + WhyDefaultWorkers + ")"} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("the closing table lacks the line %q:\n%s", line, b.String())
		}
	}

	sum.Strategies["skiplocked"].Phases = phase(790, 800, 12)
	delete(sum.Strategies, "que")
	if got, want := Verdict(sum), "In the stress phase every strategy held the offered rate: millrace 800/800 jobs/s with 0 dead tuples, skiplocked 790/800 jobs/s with 12 dead tuples."; got != want {
		t.Errorf("verdict, every strategy held:\n got %s\nwant %s", got, want)
	}
	sum.Rate = "max"
	if got, want := Verdict(sum), "In the stress phase millrace completed 800 jobs/s with 0 dead tuples, skiplocked completed 790 jobs/s with 12 dead tuples."; got != want {
		t.Errorf("verdict at --rate max:\n got %s\nwant %s", got, want)
	}
	if got := Verdict(&Summary{Strategies: map[string]*StrategySummary{"millrace": {Phases: map[string]*PhaseSummary{}}}}); got != "" {
		t.Errorf("verdict of a run with no phase: %q", got)
	}
	// A summary written before workers_why: the reason from the count.
	sum.Workers = 0
	if got := WorkersWhy(sum, "skiplocked"); got != WhyDefaultWorkers {
		t.Errorf("WorkersWhy(skiplocked 32) = %q", got)
	}
	sum.Workers = 16
	if got := WorkersWhy(sum, "millrace"); got != WhyWorkersFlag {
		t.Errorf("WorkersWhy under --workers = %q", got)
	}
}
