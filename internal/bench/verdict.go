package bench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Why a strategy runs the workers it runs, printed beside each count (a
// count of 32 beside one of 2,000 looks unfair without it).
const (
	// WhyWorkersFlag: --workers set every strategy's count.
	WhyWorkersFlag = "--workers"
	// WhyDefaultWorkers: DefaultWorkers, for a strategy that holds a
	// connection (and, for most, a transaction) per worker.
	WhyDefaultWorkers = "a connection per worker"
	// WhyGoroutineWorkers: GoroutineWorkers, for a strategy whose workers
	// are goroutines fed by batched claims, a claim as large as its free
	// workers (River's own benchmark's count).
	WhyGoroutineWorkers = "goroutines fed by batched claims, as River's benchmark"
)

// workersWhy says why strategy s runs workersFor(s) workers.
func (c *Config) workersWhy(s Strategy) string {
	if c.Workers > 0 {
		return WhyWorkersFlag
	}
	if d, ok := s.(WorkerDefaulter); ok && d.DefaultWorkers() > 0 {
		if d.DefaultWorkers() == GoroutineWorkers {
			return WhyGoroutineWorkers
		}
		return "the strategy's default"
	}
	return WhyDefaultWorkers
}

// WorkersWhy is why the named strategy of sum ran its workers: what the
// run recorded (StrategySummary.WorkersWhy), else, for a summary written
// before it did, what its count says.
func WorkersWhy(sum *Summary, name string) string {
	ss := sum.Strategies[name]
	switch {
	case ss == nil:
		return ""
	case ss.WorkersWhy != "":
		return ss.WorkersWhy
	case sum.Workers > 0:
		return WhyWorkersFlag
	case ss.Workers == GoroutineWorkers:
		return WhyGoroutineWorkers
	case ss.Workers == DefaultWorkers:
		return WhyDefaultWorkers
	}
	return ""
}

// verdictPhases are the phases a verdict is read from, the first one any
// strategy ran: the stress is what the bench is about.
var verdictPhases = []string{PhaseStress, PhaseClean, PhaseBurndown, PhaseRecovery}

// Verdict is the run in one line, from its figures: in the stress phase
// (else the first phase run), which strategies held the offered rate
// (completed at least 95% of it) and with how many dead tuples, and how
// far the others fell; without an offered rate (--rate max, burndown),
// each strategy's rate. Lost jobs are named. "" for a run with no phase.
func Verdict(sum *Summary) string {
	if sum == nil {
		return ""
	}
	names := make([]string, 0, len(sum.Strategies))
	for n := range sum.Strategies {
		names = append(names, n)
	}
	sort.Strings(names)
	phase := ""
	for _, p := range verdictPhases {
		for _, n := range names {
			if ss := sum.Strategies[n]; ss != nil && ss.Phases[p] != nil && phase == "" {
				phase = p
			}
		}
	}
	if phase == "" {
		return ""
	}
	type fig struct {
		name          string
		done, offered float64
		dead          int64
	}
	var held, fell, all []fig
	paced := true
	for _, n := range names {
		ps := sum.Strategies[n].Phases[phase]
		if ps == nil {
			continue
		}
		f := fig{n, ps.CompletedPerS, ps.OfferedPerS, ps.DeadTuplesMax}
		all = append(all, f)
		paced = paced && f.offered > 0 && sum.Rate != "max"
		if f.done >= 0.95*f.offered {
			held = append(held, f)
		} else {
			fell = append(fell, f)
		}
	}
	sort.SliceStable(fell, func(i, j int) bool { return fell[i].done > fell[j].done })
	sort.SliceStable(all, func(i, j int) bool { return all[i].done > all[j].done })
	rate := func(f fig) string { return fmt.Sprintf("%s/%s", count(f.done), count(f.offered)) }
	dead := func(d int64) string {
		if d == 1 {
			return "1 dead tuple"
		}
		return count(float64(d)) + " dead tuples"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "In the %s phase ", phase)
	switch {
	case !paced:
		for i, f := range all {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s completed %s jobs/s with %s", f.name, count(f.done), dead(f.dead))
		}
	case len(fell) == 0 && len(held) > 1:
		fmt.Fprintf(&b, "every strategy held the offered rate: ")
		for i, f := range held {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s jobs/s with %s", f.name, rate(f), dead(f.dead))
		}
	default:
		for i, f := range held {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "%s held %s jobs/s with %s", f.name, rate(f), dead(f.dead))
		}
		if len(held) > 0 && len(fell) > 0 {
			b.WriteString(", while ")
		}
		for i, f := range fell {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "%s fell to %s with %s", f.name, rate(f), dead(f.dead))
		}
	}
	var lost []string
	for _, n := range names {
		if l := sum.Strategies[n].LostJobs; l > 0 {
			lost = append(lost, fmt.Sprintf("%s lost %s jobs", n, count(float64(l))))
		}
	}
	if len(lost) > 0 {
		b.WriteString("; " + strings.Join(lost, ", "))
	}
	b.WriteString(".")
	return b.String()
}

// count is a rate or a count rounded to a whole number, with thousands
// separated by commas: 800, 101,830.
func count(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
