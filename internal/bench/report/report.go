// Package report draws the charts of a millrace bench run and writes them,
// with a summary table, into a self-contained HTML report.
//
// Every strategy runs the same schedule one after another, so the charts put
// all strategies on one x axis, the seconds since that strategy's own run
// started, one line per strategy, each strategy always in the same colour.
// The stress phase (a long transaction holding back the xmin horizon) is
// shaded in light red.
package report

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/millrace/millrace/internal/bench"
)

// HTMLFile is the name of the report Write puts next to the charts.
const HTMLFile = "report.html"

//go:embed report.html
var reportTemplate string

var tmpl = template.Must(template.New(HTMLFile).Parse(reportTemplate))

// captions say, in one sentence each, what to look for in each chart.
var captions = map[string]string{
	fileOverview: "All charts at a glance; the red band is the stress phase, when a long transaction holds back the xmin horizon.",
	fileBacklog: "Jobs enqueued but not yet completed: a strategy that keeps up stays flat near zero, " +
		"one that collapses climbs during the stress band and takes long to drain after it.",
	fileClaimLatency: "How long a worker waits to claim a job, on a log scale: watch p99 (solid) climb through the stress band " +
		"as each claim has to step over more dead tuples.",
	fileThroughput: "Jobs completed per second against the offered rate (the thin grey line, under the strategies): a line that drops below the grey one is falling behind.",
	fileDeadTuples: "Dead tuples in the strategy's tables: they pile up while the xmin horizon is held, " +
		"because vacuum cannot remove rows a running transaction might still see. " +
		"The count can go on rising after the stress band ends: releasing the pin removes nothing by itself. " +
		"n_dead_tup falls only when autovacuum gets to the table (it wakes every autovacuum_naptime, 1 min by default, " +
		"and picks a table once its dead rows pass the threshold), and until then every job finished adds one more dead row.",
	fileXminAge: "How long the oldest snapshot has been held: this is the long transaction of the stress phase, " +
		"and as long as it grows vacuum is stuck.",
	fileStorage: "Disk space of the strategy's tables (heap, indexes and TOAST, pg_total_relation_size): " +
		"a queue that reclaims space while the horizon is held stays level; one that cannot grows through the stress band.",
}

// Write renders the charts as PNGs and report.html into dir, creating dir if
// needed. sum may be nil, in which case the report has charts but no table.
func Write(dir string, sum *bench.Summary, samples []bench.Sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	ss := groupSamples(samples)
	b := stressBand(ss)
	if sum != nil && len(sum.Strategies) == 1 {
		for _, st := range sum.Strategies {
			if st.Chaos != nil {
				for _, f := range st.Chaos.Faults {
					b.marks = append(b.marks, mark{x: f.AtS, label: f.Kind})
				}
			}
		}
	}
	charts := buildCharts(ss)

	images := map[string][]byte{}
	for _, c := range charts {
		png, err := renderChart(c, b)
		if err != nil {
			return fmt.Errorf("report: %s: %w", c.file, err)
		}
		images[c.file] = png
	}
	offered := false
	for _, c := range charts {
		for _, e := range c.legend {
			offered = offered || (c.file == fileThroughput && e.text == "offered")
		}
	}
	png, err := renderOverview(charts, ss, b, offered, verdict(sum))
	if err != nil {
		return fmt.Errorf("report: %s: %w", fileOverview, err)
	}
	images[fileOverview] = png

	for name, data := range images {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}

	html, err := pageHTML(sum, ss, images)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, HTMLFile), html, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ReadTimeseries reads a timeseries.jsonl file: one JSON bench.Sample per
// line. Blank lines are skipped.
func ReadTimeseries(path string) ([]bench.Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var out []bench.Sample
	for {
		var s bench.Sample
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: sample %d (byte %d): %w", path, len(out)+1, dec.InputOffset(), err)
		}
		out = append(out, s)
	}
}

// verdict is the run in one line: what summary.json recorded, else
// (a summary written before it did) bench.Verdict of its figures.
func verdict(sum *bench.Summary) string {
	if sum == nil {
		return ""
	}
	if sum.Verdict != "" {
		return sum.Verdict
	}
	return bench.Verdict(sum)
}

// page is what report.html is executed with.
type page struct {
	Title    string
	Scenario string
	Rate     string
	// Workers is each strategy's worker count, with why it ran that many.
	Workers    string
	Verdict    string
	WorkMS     string
	Postgres   string
	Strategies []strategyView
	// Mix is the run's --mix, "" without one: the table then has the
	// mix's columns.
	Mix      string
	Overview chartView
	Charts   []chartView
}

type chartView struct {
	File    string
	Title   string
	Caption string
	Src     template.URL
}

type strategyView struct {
	Name       string
	Color      template.CSS
	Lost       int64
	Duplicates int64
	Phases     []phaseView
	// PerProcess is the jobs each process completed, when there were
	// several; Stall the stall scenario's figures. Empty when not.
	PerProcess string
	Stall      string
	// Chaos is the chaos scenario's figures and faults.
	Chaos string
	// Readers is the analytics scenario's reports, when it ran.
	Readers string
}

type phaseView struct {
	Name       string
	Seconds    string
	Completed  string
	Offered    string
	Behind     bool // completed well short of offered
	ClaimP50   string
	ClaimP99   string
	E2EP50     string
	E2EP99     string
	BacklogEnd string
	BacklogMax string
	DeadMax    string
	StorageMax string
	Rotations  string
	XminMax    string
	PgCPU      string
	WALPerJob  string
	// With --mix: completed / expected (MixShort under 99%), the
	// scheduled jobs' lateness, and the defects.
	MixCompleted string
	MixShort     bool
	SchedLate    string
	MixDefects   string
	MixDefect    bool
}

var phaseOrder = []string{bench.PhaseWarmup, bench.PhaseClean, bench.PhaseStress, bench.PhaseRecovery, bench.PhaseBurndown}

// pageHTML is report.html for sum and the series ss, with the charts'
// PNGs images (by file name; a chart without one has an empty image).
func pageHTML(sum *bench.Summary, ss []series, images map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, buildPage(sum, ss, images)); err != nil {
		return nil, fmt.Errorf("report: %s: %w", HTMLFile, err)
	}
	return buf.Bytes(), nil
}

func buildPage(sum *bench.Summary, ss []series, images map[string][]byte) page {
	p := page{Title: "millrace bench", Scenario: "—", Rate: "—", Workers: "—", WorkMS: "—", Postgres: "—"}
	colors := map[string]string{}
	var order []string
	for _, s := range ss {
		order = append(order, s.name)
		colors[s.name] = cssColor(s)
	}
	if sum != nil {
		if sum.Scenario != "" {
			p.Scenario = sum.Scenario
			p.Title = "millrace bench: " + sum.Scenario
		}
		p.Rate = formatRate(sum.Rate)
		if sum.Mix != nil {
			p.Mix = sum.Mix.String()
		}

		p.Workers = workersText(sum)
		p.Verdict = verdict(sum)
		p.WorkMS = trim(sum.WorkMS) + " ms"
		if sum.PostgresVersion != "" {
			p.Postgres = sum.PostgresVersion
		}
		var extra []string
		for name := range sum.Strategies {
			if _, ok := colors[name]; !ok {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		for _, name := range append(order, extra...) {
			st := sum.Strategies[name]
			if st == nil {
				continue
			}
			v := strategyView{Name: name, Color: template.CSS(colors[name]), Lost: st.LostJobs, Duplicates: st.DuplicateJobs}
			if v.Color == "" {
				v.Color = "#7f7f7f"
			}
			for _, ph := range phaseNames(st.Phases) {
				v.Phases = append(v.Phases, phaseRow(ph, st.Phases[ph]))
			}
			if len(v.Phases) == 0 {
				v.Phases = []phaseView{{Name: "—"}}
			}
			v.PerProcess = perProcess(st.PerProcessCompleted)
			if s := st.Stall; s != nil {
				v.Stall = fmt.Sprintf("the long job ran %ss, the enqueuing transaction was held %ss, the unserved queue received %d jobs (the drain after the run worked %d in %ss)",
					trim(s.LongJobS), trim(s.HeldTxS), s.UnservedEnqueued, s.UnservedWorked, trim(s.DrainS))
			}
			if c := st.Chaos; c != nil {
				v.Chaos = c.Line()
			}
			if r := st.Readers; r != nil {
				v.Readers = fmt.Sprintf("%d sessions, reports of %ss starting %ss apart: %d begun, %d finished, %d unfinished when the stress ended; %d attempts, %d refused (cancelled or terminated), %d retried",
					r.Sessions, trim(r.DurationS), trim(r.IntervalS), r.Reports, r.Finished, r.Unfinished, r.Started, r.Cancelled, r.Retried)
			}
			p.Strategies = append(p.Strategies, v)
		}
	}

	view := func(file, title string) chartView {
		caption := captions[file]
		if file == fileDeadTuples {
			if lag := deadTuplesLag(ss); lag != "" {
				caption += " In this run: " + lag + "."
			}
		}
		if file == fileStorage {
			if h := storageHistory(sum, ss); h != "" {
				caption += " " + h
			}
		}
		return chartView{
			File:    file,
			Title:   title,
			Caption: caption,
			Src:     template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(images[file])),
		}
	}
	p.Overview = view(fileOverview, "Overview")
	p.Charts = []chartView{
		view(fileBacklog, "Backlog"),
		view(fileClaimLatency, "Claim latency"),
		view(fileThroughput, "Throughput"),
		view(fileDeadTuples, "Dead tuples"),
		view(fileXminAge, "Oldest xmin age"),
		view(fileStorage, "Storage"),
	}
	return p
}

// deadTuplesLag says, for each strategy whose dead tuples went on rising
// after its stress phase ended, for how long and by how much, or "" when
// none did.
func deadTuplesLag(ss []series) string {
	var parts []string
	for _, s := range ss {
		end := -1 // the last sample of the stress phase
		for i, x := range s.samples {
			if x.Phase == bench.PhaseStress {
				end = i
			}
		}
		if end < 0 || end == len(s.samples)-1 {
			continue
		}
		at, peak := s.samples[end], end
		for i := end + 1; i < len(s.samples); i++ {
			if s.samples[i].DeadTuples > s.samples[peak].DeadTuples {
				peak = i
			}
		}
		top := s.samples[peak]
		grew := top.DeadTuples - at.DeadTuples
		// Noise is not a lag: at least 1,000 more, 5 % above the count at
		// the release, and 2 s after it.
		if grew < 1000 || float64(grew) < 0.05*float64(at.DeadTuples) || top.T-at.T < 2 {
			continue
		}
		then := "until autovacuum got to it"
		if peak == len(s.samples)-1 {
			then = "and was still rising when the run ended (autovacuum had not yet got to it)"
		}
		parts = append(parts, fmt.Sprintf("%s's count rose for %s s after the pin was released (%s to %s) %s",
			s.name, trim(top.T-at.T), human(float64(at.DeadTuples)), human(float64(top.DeadTuples)), then))
	}
	return strings.Join(parts, "; ")
}

// storageHistory says, for the storage chart, whose storage includes a
// history and how large it grew in this run (from the summary, when it
// has the figure), or "" when no strategy's does.
func storageHistory(sum *bench.Summary, ss []series) string {
	note := historyNote(ss)
	if note == "" {
		return ""
	}
	out := "In this run " + note + " (kept for their retention, 24 h for completed jobs by default): " +
		"a queue that deletes its jobs when they are done keeps none, so the lines are not like for like."
	if sum == nil {
		return out
	}
	var most []string
	for _, n := range historyNames(ss) {
		var h int64
		if st := sum.Strategies[n]; st != nil {
			for _, ps := range st.Phases {
				if ps != nil {
					h = max(h, ps.HistoryBytesMax)
				}
			}
		}
		if h > 0 {
			most = append(most, fmt.Sprintf("%s's history reached %s", n, fmtBytes(float64(h))))
		}
	}
	if len(most) > 0 {
		out += " " + strings.ToUpper(most[0][:1]) + strings.Join(most, ", ")[1:] + " (drawn thin; its queue's tables thick)."
	}
	return out
}

// phaseNames is the phases present, in run order, then any unknown ones
// sorted by name.
func phaseNames(m map[string]*bench.PhaseSummary) []string {
	var out []string
	known := map[string]bool{}
	for _, ph := range phaseOrder {
		known[ph] = true
		if m[ph] != nil {
			out = append(out, ph)
		}
	}
	var extra []string
	for ph, v := range m {
		if !known[ph] && v != nil {
			extra = append(extra, ph)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

func phaseRow(name string, ps *bench.PhaseSummary) phaseView {
	v := phaseView{
		Name:       name,
		Seconds:    trim(ps.Seconds),
		Completed:  fmtNum(ps.CompletedPerS),
		Offered:    fmtNum(ps.OfferedPerS),
		Behind:     ps.OfferedPerS > 0 && ps.CompletedPerS < 0.95*ps.OfferedPerS,
		ClaimP50:   fmtMS(ps.ClaimP50MS),
		ClaimP99:   fmtMS(ps.ClaimP99MS),
		E2EP50:     fmtMS(ps.E2EP50MS),
		E2EP99:     fmtMS(ps.E2EP99MS),
		BacklogEnd: human(float64(ps.BacklogEnd)),
		BacklogMax: human(float64(ps.BacklogMax)),
		DeadMax:    human(float64(ps.DeadTuplesMax)),
		StorageMax: storageMax(ps),
		Rotations:  rotations(ps.Rotations),
		XminMax:    fmtNum(ps.XminAgeMaxS) + " s",
		PgCPU:      fmt.Sprintf("%.0f%%", ps.PgCPUPct),
		WALPerJob:  fmtBytes(ps.WALBytesPerJob),
	}
	if ps.SchedLateP99MS == nil {
		return v
	}
	v.MixCompleted = fmt.Sprintf("%d / %d", ps.Completed, ps.Expected)
	if ps.Expected > 0 {
		v.MixCompleted += fmt.Sprintf(" (%.2f%%)", 100*float64(ps.Completed)/float64(ps.Expected))
		v.MixShort = float64(ps.Completed) < 0.99*float64(ps.Expected)
	}
	v.SchedLate = fmtMS(*ps.SchedLateP99MS)
	var cancelled, dupes int64
	if ps.CancelledRun != nil {
		cancelled = *ps.CancelledRun
	}
	if ps.UniqueDupesRun != nil {
		dupes = *ps.UniqueDupesRun
	}
	v.MixDefects = fmt.Sprintf("%d / %d", cancelled, dupes)
	v.MixDefect = cancelled+dupes > 0
	return v
}

// perProcess renders per-process completed counts with their shares, or ""
// for a single process.
func perProcess(counts []int64) string {
	if len(counts) < 2 {
		return ""
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	parts := make([]string, len(counts))
	for i, c := range counts {
		share := 0.0
		if total > 0 {
			share = 100 * float64(c) / float64(total)
		}
		parts[i] = fmt.Sprintf("#%d %d (%.1f%%)", i, c, share)
	}
	return strings.Join(parts, ", ")
}

// rotations renders a phase's rotation count: "—" for strategies that do
// not rotate.
func rotations(n *int64) string {
	if n == nil {
		return "—"
	}
	return fmt.Sprint(*n)
}

func cssColor(s series) string {
	r, g, b, _ := s.color.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// formatRate renders Summary.Rate: a number of jobs/s, or a word like "max".
func formatRate(r any) string {
	switch v := r.(type) {
	case nil:
		return "—"
	case float64:
		return fmtNum(v) + " jobs/s"
	case int:
		return fmt.Sprintf("%d jobs/s", v)
	case int64:
		return fmt.Sprintf("%d jobs/s", v)
	case json.Number:
		return v.String() + " jobs/s"
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// fmtNum formats a rate or count: whole numbers without decimals, small
// numbers with one.
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// fmtMS formats a latency in milliseconds with a precision that suits its
// size.
func fmtMS(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case a == 0:
		return "0"
	case a < 1:
		return fmt.Sprintf("%.3f", v)
	case a < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// fmtBytes formats a byte count: 812 B, 1.4 KiB, 3.2 MiB.
func fmtBytes(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + units[i]
}

// workersText is --workers, or each strategy's own count when it was not
// given (strategies may default differently: millrace and river run
// River's own benchmark's 2,000), each with why (bench.WorkersWhy).
func workersText(sum *bench.Summary) string {
	if sum.Workers > 0 {
		return fmt.Sprintf("%d (%s)", sum.Workers, bench.WhyWorkersFlag)
	}
	names := make([]string, 0, len(sum.Strategies))
	for n := range sum.Strategies {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		if w := sum.Strategies[n].Workers; w > 0 {
			part := fmt.Sprintf("%s %d", n, w)
			if why := bench.WorkersWhy(sum, n); why != "" {
				part += " (" + why + ")"
			}
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// storageMax is a phase's largest storage, with the part of it that is
// history (finished jobs kept for their retention) when there is one.
func storageMax(ps *bench.PhaseSummary) string {
	if ps.HistoryBytesMax == 0 {
		return fmtBytes(float64(ps.StorageBytesMax))
	}
	return fmtBytes(float64(ps.StorageBytesMax)) + " (history " + fmtBytes(float64(ps.HistoryBytesMax)) + ")"
}
