package bench

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

const (
	red   = "\033[31m"
	bold  = "\033[1m"
	reset = "\033[0m"
)

// live writes the live progress line: rewritten in place on a terminal,
// a plain line otherwise (callers print less often then).
func (c *Config) live(line string) {
	if c.TTY {
		fmt.Fprintf(c.Progress, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(c.Progress, line)
}

// liveLine is the progress line for one sample; with --mix (mix) it adds
// the jobs that should run (offered minus cancelled and de-duplicated),
// the scheduled jobs' lateness and the defects seen so far.
func liveLine(s *Sample, mix bool) string {
	l := fmt.Sprintf("%-16s %-8s %4.0fs  offered %6d/s  completed %6d/s  backlog %8d  claim p99 %8.2f ms",
		s.Strategy, s.Phase, s.T, s.Offered, s.Completed, s.Backlog, s.ClaimP99)
	if mix {
		l += fmt.Sprintf("  expected %6d/s  sched late p99 %6.1f ms", s.Offered-s.Cancelled-s.Deduplicated, s.SchedLateP99)
		if s.CancelledRun > 0 {
			l += fmt.Sprintf("  CANCELLED RAN %d", s.CancelledRun)
		}
	}
	if s.XminAgeS >= 1 {
		l += fmt.Sprintf("  xmin held %.0fs", s.XminAgeS)
	}
	if s.Duplicates > 0 {
		l += fmt.Sprintf("  duplicates %d", s.Duplicates)
	}
	return l
}

// strategyLine is printed when a strategy's run ends.
func strategyLine(name string, ss *StrategySummary, color bool) string {
	var b strings.Builder
	if color {
		b.WriteString("\r\033[K")
	}
	if ss.WorkersWhy != "" {
		fmt.Fprintf(&b, "%s done (%d workers: %s):", name, ss.Workers, ss.WorkersWhy)
	} else {
		fmt.Fprintf(&b, "%s done (%d workers):", name, ss.Workers)
	}
	for _, p := range phaseOrder(ss) {
		ps := ss.Phases[p]
		fmt.Fprintf(&b, "  %s %.0f/%.0f jobs/s, claim p99 %.2f ms, ", p, ps.CompletedPerS, ps.OfferedPerS, ps.ClaimP99MS)
		if ps.PickupP99MS > 0 {
			fmt.Fprintf(&b, "pickup p50/p99 %.2f/%.2f ms, ", ps.PickupP50MS, ps.PickupP99MS)
		}
		fmt.Fprintf(&b, "backlog max %d", ps.BacklogMax)
		if ps.SchedLateP99MS != nil {
			fmt.Fprintf(&b, ", completed %d/%d expected (%s), sched late p99 %.1f ms", ps.Completed, ps.Expected, pct(ps.Completed, ps.Expected), *ps.SchedLateP99MS)
		}
		b.WriteString(";")
	}
	if ss.LostJobs > 0 {
		fmt.Fprintf(&b, "  %s", paint(fmt.Sprintf("LOST %d JOBS", ss.LostJobs), red+bold, color))
	}
	return b.String()
}

// pct is n as a percentage of of ("-" when of is 0).
func pct(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

func paint(s, code string, color bool) string {
	if !color {
		return s
	}
	return code + s + reset
}

func phaseOrder(ss *StrategySummary) []string {
	var out []string
	for _, p := range []string{PhaseBurndown, PhaseClean, PhaseStress, PhaseRecovery} {
		if ss != nil && ss.Phases[p] != nil {
			out = append(out, p)
		}
	}
	return out
}

// WriteTable writes the closing table of a run: one row per strategy and
// phase, and a red line for every strategy that lost jobs.
func WriteTable(w io.Writer, sum *Summary, color bool) {
	names := make([]string, 0, len(sum.Strategies))
	for n := range sum.Strategies {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tphase\toffered/s\tcompleted/s\tclaim p50 ms\tclaim p99 ms\te2e p50 ms\te2e p99 ms\tbacklog end\tbacklog max\tdead tuples max\tstorage max MB\trotations\txmin age max s\tpg cpu %\tWAL B/job\t")
	for _, n := range names {
		ss := sum.Strategies[n]
		for _, p := range phaseOrder(ss) {
			ps := ss.Phases[p]
			rot := "-"
			if ps.Rotations != nil {
				rot = fmt.Sprint(*ps.Rotations)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%d\t%d\t%d\t%.1f\t%s\t%.0f\t%.0f\t%.0f\t\n", n, p,
				ps.OfferedPerS, ps.CompletedPerS, ps.ClaimP50MS, ps.ClaimP99MS, ps.E2EP50MS, ps.E2EP99MS,
				ps.BacklogEnd, ps.BacklogMax, ps.DeadTuplesMax, float64(ps.StorageBytesMax)/1e6, rot,
				ps.XminAgeMaxS, ps.PgCPUPct, ps.WALBytesPerJob)
		}
	}
	tw.Flush()
	// The run in one line, and why each strategy ran its workers.
	if v := cmp.Or(sum.Verdict, Verdict(sum)); v != "" {
		fmt.Fprintln(w, paint(v, bold, color))
	}
	var why []string
	for _, n := range names {
		if ss := sum.Strategies[n]; ss.Workers > 0 {
			x := fmt.Sprintf("%s %d", n, ss.Workers)
			if r := WorkersWhy(sum, n); r != "" {
				x += " (" + r + ")"
			}
			why = append(why, x)
		}
	}
	if len(why) > 0 {
		fmt.Fprintf(w, "workers: %s\n", strings.Join(why, ", "))
	}
	for _, n := range names {
		ss := sum.Strategies[n]
		var hist []string
		for _, p := range phaseOrder(ss) {
			if h := ss.Phases[p].HistoryBytesMax; h > 0 {
				hist = append(hist, fmt.Sprintf("%s %.1f MB", p, float64(h)/1e6))
			}
		}
		if len(hist) > 0 {
			fmt.Fprintf(w, "%s: storage max includes history (finished jobs kept for their retention): %s\n", n, strings.Join(hist, ", "))
		}
	}
	for _, n := range names {
		ss := sum.Strategies[n]
		if len(ss.PerProcessCompleted) > 1 {
			fmt.Fprintf(w, "%s: completed per process:%s\n", n, perProcess(ss.PerProcessCompleted))
		}
		if st := ss.Stall; st != nil {
			fmt.Fprintf(w, "%s: stall: long job ran %.1fs, transaction held %.1fs, unserved queue %d jobs (%d worked by the drain in %.1fs)\n",
				n, st.LongJobS, st.HeldTxS, st.UnservedEnqueued, st.UnservedWorked, st.DrainS)
		}
		if ch := ss.Chaos; ch != nil {
			line := fmt.Sprintf("%s: chaos: %s", n, ch.Line())
			if ch.Lost > 0 || ch.Stranded > 0 || ch.Duplicated > 0 {
				line = paint(line, red+bold, color)
			}
			fmt.Fprintln(w, line)
		}
		if r := ss.Readers; r != nil {
			kind := "taking an xid"
			if r.ReadOnly {
				kind = "read-only"
			}
			fmt.Fprintf(w, "%s: analytics: %d readers (%s) of %gs, %gs apart: reports %d, finished %d, unfinished at the end of stress %d; attempts %d, cancelled %d, retried %d\n",
				n, r.Sessions, kind, r.DurationS, r.IntervalS, r.Reports, r.Finished, r.Unfinished, r.Started, r.Cancelled, r.Retried)
		}
		if ss.DuplicateJobs > 0 {
			fmt.Fprintf(w, "%s: %d jobs worked more than once\n", n, ss.DuplicateJobs)
		}
		if ss.EnqueueErrors > 0 {
			fmt.Fprintf(w, "%s: %d enqueue calls failed (their jobs offered, never enqueued); the last: %s\n", n, ss.EnqueueErrors, ss.EnqueueLastError)
		}
		if ss.Mix != nil {
			writeMix(w, n, ss, color)
		}
		if ss.LostJobs > 0 {
			fmt.Fprintln(w, paint(fmt.Sprintf("ERROR: %s lost %d jobs (enqueued, committed, never worked, no longer stored)", n, ss.LostJobs), red+bold, color))
		}
	}
}

// perProcess formats per-process counts with their shares of the total.
func perProcess(counts []int64) string {
	var total int64
	for _, c := range counts {
		total += c
	}
	var b strings.Builder
	for i, c := range counts {
		share := 0.0
		if total > 0 {
			share = 100 * float64(c) / float64(total)
		}
		fmt.Fprintf(&b, " #%d %d (%.1f%%)", i, c, share)
	}
	return b.String()
}

// writeMix writes the lines of a --mix run: per phase, the jobs offered,
// expected and completed, the lateness of scheduled and retried jobs, and
// the defects in red.
func writeMix(w io.Writer, name string, ss *StrategySummary, color bool) {
	for _, p := range phaseOrder(ss) {
		ps := ss.Phases[p]
		if ps.SchedLateP99MS == nil {
			continue
		}
		fmt.Fprintf(w, "%s %s: offered %d, cancelled %d, de-duplicated %d, expected %d, completed %d (%s); sched late p99 %.1f ms (max %.1f), retry late p99 %.1f ms; cancelled ran %d, unique dupes ran %d\n",
			name, p, ps.Offered, *ps.Cancelled, *ps.Deduplicated, ps.Expected, ps.Completed, pct(ps.Completed, ps.Expected),
			*ps.SchedLateP99MS, *ps.SchedLateMaxMS, *ps.RetryLateP99MS, *ps.CancelledRun, *ps.UniqueDupesRun)
	}
	m := ss.Mix
	fmt.Fprintf(w, "%s: mix: drain after the run %.1fs (%d expected jobs not completed), cancels that missed %d, duplicates inconclusive %d\n",
		name, m.DrainS, m.DrainPending, m.CancelMissed, m.UniqueSkipped)
	for _, d := range m.Notes {
		fmt.Fprintf(w, "%s: mix: %s\n", name, d)
	}
	if len(m.PendingByKind) > 0 {
		fmt.Fprintf(w, "%s: mix: not completed at the end:", name)
		for _, k := range sortedKeys(m.PendingByKind) {
			fmt.Fprintf(w, " %s: %d;", k, m.PendingByKind[k])
		}
		fmt.Fprintln(w)
	}
	for _, d := range []struct {
		n    int64
		what string
	}{{m.UniqueNotDeduplicated, "unique duplicates were stored (not reported as duplicates)"}, {m.SchedEarly, "scheduled jobs started before their run_at"}} {
		if d.n > 0 {
			fmt.Fprintln(w, paint(fmt.Sprintf("ERROR: %s: %d %s", name, d.n, d.what), red+bold, color))
		}
	}
	for _, p := range phaseOrder(ss) {
		ps := ss.Phases[p]
		if ps.CancelledRun != nil && *ps.CancelledRun > 0 {
			fmt.Fprintln(w, paint(fmt.Sprintf("ERROR: %s %s: %d cancelled jobs ran", name, p, *ps.CancelledRun), red+bold, color))
		}
		if ps.UniqueDupesRun != nil && *ps.UniqueDupesRun > 0 {
			fmt.Fprintln(w, paint(fmt.Sprintf("ERROR: %s %s: %d unique duplicates ran", name, p, *ps.UniqueDupesRun), red+bold, color))
		}
	}
}
