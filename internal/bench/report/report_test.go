package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/bench"
)

var allPNGs = []string{fileBacklog, fileClaimLatency, fileThroughput, fileDeadTuples, fileXminAge, fileStorage, fileOverview}

// synthetic builds a clean/stress/recovery run of two strategies at 1000
// jobs/s: millrace keeps up, skiplocked collapses during the stress phase
// (backlog and claim latency run away, dead tuples pile up) and drains
// slowly afterwards.
func synthetic() []bench.Sample {
	const rate = 1000
	phase := func(t int) string {
		switch {
		case t < 30:
			return bench.PhaseClean
		case t < 90:
			return bench.PhaseStress
		default:
			return bench.PhaseRecovery
		}
	}
	var out []bench.Sample
	start := 1.7e9
	for _, name := range []string{"millrace", "skiplocked"} {
		var backlog, dead, peak int64
		for t := range 150 {
			ph := phase(t)
			s := bench.Sample{Strategy: name, Phase: ph, T: float64(t), Unix: start + float64(t),
				Offered: rate, Enqueued: rate, PgCPUPct: 80, WALBytes: 300_000, WALBytesPerJob: 300}
			wobble := 20 * math.Sin(float64(t)/3)
			held := 0.0
			if ph == bench.PhaseStress {
				held = float64(t - 29)
				s.XminAge = int64(held * rate)
			}
			s.XminAgeS = held
			switch name {
			case "millrace":
				s.Completed = rate + int64(wobble)
				backlog = max(0, backlog+rate-s.Completed)
				dead = 2000 + int64(10*wobble)
				s.ClaimP50, s.ClaimP99 = 0.3, 1.5
				if t%17 == 0 {
					s.ClaimP50 = 0 // an idle second: must survive the log scale
				}
			case "skiplocked":
				switch ph {
				case bench.PhaseStress:
					s.Completed = max(150, rate-int64(held*15))
					dead += 5 * rate
				case bench.PhaseRecovery:
					s.Completed = 1400
					dead = 3000
				default:
					s.Completed = rate + int64(wobble)
					dead = 3000
				}
				backlog = max(0, backlog+rate-s.Completed)
				s.ClaimP50 = 0.5 + float64(dead)/20000
				s.ClaimP99 = 3 + float64(dead)/2000
			}
			s.Backlog = backlog
			s.DeadTuples = dead
			s.E2EP50, s.E2EP99 = s.ClaimP50+10, s.ClaimP99+12+float64(backlog)/rate*1000
			// Without a VACUUM FULL a table does not shrink.
			peak = max(peak, 8192*(1+dead/50))
			heap := peak
			if name == "millrace" {
				// Segments fill and are truncated every 10 s.
				heap = 8192 * (40 + int64(t%10)*30)
				if t%10 == 0 && t > 0 {
					s.Rotations = 1
				}
			}
			s.StorageBytes = heap + heap/4
			s.Tables = map[string]bench.TableStats{name + "_jobs": {DeadTuples: dead, LiveTuples: backlog, HeapBytes: heap,
				IndexBytes: heap / 4, TotalBytes: heap + heap/4}}
			out = append(out, s)
		}
	}
	return out
}

func syntheticSummary(samples []bench.Sample) *bench.Summary {
	sum := &bench.Summary{Scenario: "long-transaction", PostgresVersion: "17.2", Rate: float64(1000), Workers: 16, WorkMS: 5,
		Strategies: map[string]*bench.StrategySummary{}}
	for _, s := range samples {
		st := sum.Strategies[s.Strategy]
		if st == nil {
			st = &bench.StrategySummary{Phases: map[string]*bench.PhaseSummary{}}
			sum.Strategies[s.Strategy] = st
		}
		ps := st.Phases[s.Phase]
		if ps == nil {
			ps = &bench.PhaseSummary{}
			st.Phases[s.Phase] = ps
		}
		n := ps.Seconds
		ps.Seconds++
		avg := func(old, v float64) float64 { return (old*n + v) / (n + 1) }
		ps.OfferedPerS = avg(ps.OfferedPerS, float64(s.Offered))
		ps.CompletedPerS = avg(ps.CompletedPerS, float64(s.Completed))
		ps.ClaimP50MS = avg(ps.ClaimP50MS, s.ClaimP50)
		ps.ClaimP99MS = max(ps.ClaimP99MS, s.ClaimP99)
		ps.E2EP50MS = avg(ps.E2EP50MS, s.E2EP50)
		ps.E2EP99MS = max(ps.E2EP99MS, s.E2EP99)
		ps.BacklogEnd = s.Backlog
		ps.BacklogMax = max(ps.BacklogMax, s.Backlog)
		ps.DeadTuplesMax = max(ps.DeadTuplesMax, s.DeadTuples)
		ps.StorageBytesMax = max(ps.StorageBytesMax, s.StorageBytes)
		if s.Strategy == "millrace" {
			if ps.Rotations == nil {
				ps.Rotations = new(int64)
			}
			*ps.Rotations += s.Rotations
		}
		ps.XminAgeMaxS = max(ps.XminAgeMaxS, s.XminAgeS)
		ps.PgCPUPct = avg(ps.PgCPUPct, s.PgCPUPct)
		ps.WALBytesPerJob = avg(ps.WALBytesPerJob, s.WALBytesPerJob)
	}
	sum.Strategies["skiplocked"].LostJobs = 3
	sum.Strategies["skiplocked"].DuplicateJobs = 1
	sum.Strategies["millrace"].PerProcessCompleted = []int64{30000, 45000, 75000}
	sum.Strategies["millrace"].Stall = &bench.StallStats{LongJobS: 60, HeldTxS: 59.9, UnservedEnqueued: 300, UnservedWorked: 300, DrainS: 0.4}
	sum.Strategies["skiplocked"].PerProcessCompleted = []int64{150000}
	sum.Strategies["skiplocked"].Readers = &bench.ReaderStats{Sessions: 3, DurationS: 5, IntervalS: 2,
		Reports: 61, Finished: 59, Unfinished: 2, Started: 413, Cancelled: 352, Retried: 352}
	return sum
}

func checkPNGs(t *testing.T, dir string) {
	t.Helper()
	for _, name := range allPNGs {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", name, err)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 {
			t.Fatalf("%s: %dx%d", name, cfg.Width, cfg.Height)
		}
		if name != fileOverview && (cfg.Width != 1000 || cfg.Height != 500) {
			t.Errorf("%s: %dx%d, want 1000x500", name, cfg.Width, cfg.Height)
		}
		// Decode the whole image too, not just the header.
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	samples := synthetic()
	if err := Write(dir, syntheticSummary(samples), samples); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, dir)

	raw, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)

	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)
	if m := external.FindString(html); m != "" {
		t.Errorf("report.html references an external resource: %q", m)
	}
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Errorf("report.html contains an http(s) URL")
	}
	for _, want := range []string{"millrace", "skiplocked", "long-transaction", "17.2", "1000 jobs/s", "16", "5 ms"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(html, `src="data:image/png;base64,`); n != len(allPNGs) {
		t.Errorf("report.html has %d inline PNGs, want %d", n, len(allPNGs))
	}
	if strings.Contains(html, "ZgotmplZ") {
		t.Errorf("html/template rejected a value (ZgotmplZ)")
	}
	if !regexp.MustCompile(`class="bad">3<`).MatchString(html) {
		t.Errorf("lost jobs > 0 not shown with the bad class")
	}
	if !regexp.MustCompile(`class="ok">0<`).MatchString(html) {
		t.Errorf("lost jobs == 0 not shown with the ok class")
	}
	if !strings.Contains(html, `style="background: #2ca02c"`) {
		t.Errorf("millrace swatch colour missing")
	}
	// Storage max and rotations: millrace rotates 6 times in the 60 s
	// stress phase; skiplocked does not rotate at all.
	if !strings.Contains(html, "<th>storage max</th>") || !strings.Contains(html, "<th>rotations</th>") {
		t.Errorf("report.html lacks the storage and rotations columns")
	}
	if !regexp.MustCompile(`<td class="ph">[0-9.]+ MiB</td>\s*<td class="ph">6</td>`).MatchString(html) {
		t.Errorf("millrace's stress row lacks its storage max and 6 rotations")
	}
	if !regexp.MustCompile(`<td class="ph">[0-9.]+ MiB</td>\s*<td class="ph">—</td>`).MatchString(html) {
		t.Errorf("a strategy without rotations does not show —")
	}
	for _, want := range []string{"#0 30000 (20.0%), #1 45000 (30.0%), #2 75000 (50.0%)", "the long job ran 60s", "worked 300 in 0.4s",
		"<b>skiplocked</b>, analytics readers: 3 sessions, reports of 5s starting 2s apart: 61 begun, 59 finished, 2 unfinished when the stress ended; 413 attempts, 352 refused (cancelled or terminated), 352 retried"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(html, "<b>skiplocked</b>: jobs completed per process") {
		t.Errorf("per-process line for a single process")
	}
}

// TestStorageChart checks the storage chart plots each strategy's storage
// bytes in MB.
func TestStorageChart(t *testing.T) {
	samples := synthetic()
	for _, c := range buildCharts(groupSamples(samples)) {
		if c.file != fileStorage {
			continue
		}
		if c.ylabel != "storage (MB)" || len(c.lines) != 2 {
			t.Fatalf("storage chart: %q, %d lines", c.ylabel, len(c.lines))
		}
		if got, want := c.lines[0].xys[5].Y, float64(samples[5].StorageBytes)/1e6; got != want {
			t.Errorf("storage at t=5: %v MB, want %v", got, want)
		}
		return
	}
	t.Fatal("no storage chart")
}

// TestStorageChartHistory: a strategy with a history has its queue's
// storage drawn as its usual line (total less history) and its history as
// a thin solid one; one without keeps its single line.
func TestStorageChartHistory(t *testing.T) {
	samples := synthetic()
	for i := range samples {
		if samples[i].Strategy == samples[0].Strategy {
			samples[i].HistoryBytes = samples[i].StorageBytes / 4
		}
	}
	for _, c := range buildCharts(groupSamples(samples)) {
		if c.file != fileStorage {
			continue
		}
		if len(c.lines) != 3 || !strings.Contains(c.title, "history thin") {
			t.Fatalf("storage chart %q with %d lines; want 3 (two strategies' queues, one history)", c.title, len(c.lines))
		}
		if got, want := c.lines[0].xys[5].Y, float64(samples[5].StorageBytes-samples[5].HistoryBytes)/1e6; got != want {
			t.Errorf("queue storage at t=5: %v MB, want %v", got, want)
		}
		h := c.lines[2]
		if h.dashes != nil || h.width >= singleStyle.lineWidth || h.xys[5].Y != float64(samples[5].HistoryBytes)/1e6 {
			t.Errorf("history line: dashes %v, width %v, at t=5 %v MB; want solid, thinner than %v, %v",
				h.dashes, h.width, h.xys[5].Y, singleStyle.lineWidth, float64(samples[5].HistoryBytes)/1e6)
		}
		return
	}
	t.Fatal("no storage chart")
}

// TestThroughputExpectedLine: with --mix, the throughput chart also draws
// the expected rate (offered less cancelled and de-duplicated); without
// one it does not.
func TestThroughputExpectedLine(t *testing.T) {
	expectedLines := func(samples []bench.Sample) (n int, y float64) {
		for _, c := range buildCharts(groupSamples(samples)) {
			if c.file != fileThroughput {
				continue
			}
			for _, l := range c.lines {
				if reflect.DeepEqual(l.color, expectedColor) {
					n, y = n+1, l.xys[5].Y
				}
			}
		}
		return n, y
	}
	samples := synthetic()
	if n, _ := expectedLines(samples); n != 0 {
		t.Fatalf("%d expected lines without a mix", n)
	}
	for i := range samples {
		samples[i].Cancelled, samples[i].Deduplicated = 5, 10
	}
	n, y := expectedLines(samples)
	if want := float64(samples[5].Offered - 15); n != 1 || y != want {
		t.Fatalf("with a mix: %d expected lines, at t=5 %v; want 1, %v", n, y, want)
	}
}

// TestWriteNoStress covers runs without a stress band (burndown) and with no
// summary.
func TestWriteNoStress(t *testing.T) {
	var samples []bench.Sample
	for i := range 60 {
		samples = append(samples, bench.Sample{Strategy: "other", Phase: bench.PhaseBurndown, T: float64(i),
			Backlog: int64(60000 - 1000*i), Completed: 1000})
	}
	if b := stressBand(groupSamples(samples)); b.ok {
		t.Fatalf("band without stress samples: %+v", b)
	}
	dir := t.TempDir()
	if err := Write(dir, nil, samples); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, dir)
}

func TestWriteEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, &bench.Summary{Rate: "max"}, nil); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, dir)
}

// TestLogScaleZeroLatency: all-zero latencies must clamp to the floor, not
// make the log scale panic or error.
func TestLogScaleZeroLatency(t *testing.T) {
	var samples []bench.Sample
	for _, name := range []string{"millrace", "que"} {
		for i := range 20 {
			ph := bench.PhaseClean
			if i >= 5 && i < 10 {
				ph = bench.PhaseStress
			}
			samples = append(samples, bench.Sample{Strategy: name, Phase: ph, T: float64(i), ClaimP50: 0, ClaimP99: 0})
		}
	}
	ss := groupSamples(samples)
	charts := buildCharts(ss)
	for _, c := range charts {
		if c.file != fileClaimLatency {
			continue
		}
		for _, l := range c.lines {
			for _, p := range l.xys {
				if p.Y != latencyFloorMS {
					t.Fatalf("latency %v not clamped to %v", p.Y, latencyFloorMS)
				}
			}
		}
		data, err := renderChart(c, stressBand(ss))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(t.TempDir(), nil, samples); err != nil {
		t.Fatal(err)
	}
}

func TestStressBand(t *testing.T) {
	samples := synthetic()
	b := stressBand(groupSamples(samples))
	if !b.ok || b.from != 30 || b.to != 89 {
		t.Fatalf("band = %+v, want 30..89", b)
	}
}

func TestColorsStable(t *testing.T) {
	ss := groupSamples([]bench.Sample{{Strategy: "zeta"}, {Strategy: "river"}, {Strategy: "alpha"}, {Strategy: "millrace"}})
	got := map[string]string{}
	for _, s := range ss {
		got[s.name] = cssColor(s)
	}
	if got["millrace"] != "#2ca02c" || got["river"] != "#8c564b" {
		t.Errorf("known colours: %v", got)
	}
	if got["zeta"] == got["alpha"] {
		t.Errorf("two unknown strategies share a colour: %v", got)
	}
	if ss[0].name != "zeta" || ss[3].name != "millrace" {
		t.Errorf("strategies not in run order: %v", ss)
	}
}

func TestReadTimeseries(t *testing.T) {
	want := synthetic()[:40]
	want[3].Lost, want[3].Duplicates, want[3].XminHolder = 2, 1, "session pid 42 (idle in transaction)"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, s := range want {
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			buf.WriteString("\n") // a blank line is tolerated
		}
	}
	path := filepath.Join(t.TempDir(), "timeseries.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTimeseries(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs: got %d samples, want %d", len(got), len(want))
	}

	if err := os.WriteFile(path, []byte(`{"strategy":"x","t":1}`+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTimeseries(path); err == nil || !strings.Contains(err.Error(), "sample 2") {
		t.Fatalf("bad line: err = %v", err)
	}
	if _, err := ReadTimeseries(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("missing file: no error")
	}
}

// TestDemo writes the synthetic report to $MILLRACE_REPORT_DEMO, for looking
// at the charts by eye; with $MILLRACE_REPORT_FROM set to a bench output
// directory it redraws that run's report instead.
func TestDemo(t *testing.T) {
	dir := os.Getenv("MILLRACE_REPORT_DEMO")
	if dir == "" {
		t.Skip("set MILLRACE_REPORT_DEMO=/some/dir to write the demo report")
	}
	samples := synthetic()
	sum := syntheticSummary(samples)
	if from := os.Getenv("MILLRACE_REPORT_FROM"); from != "" {
		var err error
		if samples, err = ReadTimeseries(filepath.Join(from, "timeseries.jsonl")); err != nil {
			t.Fatal(err)
		}
		sum = nil
		if raw, err := os.ReadFile(filepath.Join(from, "summary.json")); err == nil {
			sum = new(bench.Summary)
			if err := json.Unmarshal(raw, sum); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := Write(dir, sum, samples); err != nil {
		t.Fatal(err)
	}
}

func TestHumanTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 149}, {0, 1}, {0, 31500}, {-5, 5}, {0.3, 0.9}, {0, 3e6}} {
		ts := humanTicks{}.Ticks(r[0], r[1])
		labelled := 0
		for _, tk := range ts {
			if tk.Value < r[0]-1e-9 || tk.Value > r[1]+1e-9 {
				t.Errorf("%v: tick %v out of range", r, tk.Value)
			}
			if tk.Label != "" {
				labelled++
			}
		}
		if labelled < 3 || labelled > 8 {
			t.Errorf("%v: %d labelled ticks: %v", r, labelled, ts)
		}
	}
	if got := human(25000); got != "25k" {
		t.Errorf("human(25000) = %q", got)
	}
	if got := human(0.01); got != "0.01" {
		t.Errorf("human(0.01) = %q", got)
	}
}

// TestWriteMix checks the table's --mix columns: present with a mix, with
// completed / expected in red under 99% and the defects in red; absent
// without one.
func TestWriteMix(t *testing.T) {
	samples := synthetic()
	sum := syntheticSummary(samples)
	n := func(v int64) *int64 { return &v }
	f := func(v float64) *float64 { return &v }
	sum.Mix = &bench.Mix{Fail: 20, Sched: 20, Unique: 10}
	for name, st := range sum.Strategies {
		for ph, ps := range st.Phases {
			ps.Offered, ps.Expected, ps.Completed = 1000, 900, 900
			ps.Cancelled, ps.Deduplicated, ps.CancelledRun, ps.UniqueDupesRun = n(50), n(50), n(0), n(0)
			ps.SchedLateP99MS, ps.SchedLateMaxMS, ps.RetryLateP99MS = f(12.5), f(40), f(8)
			if name == "millrace" && ph == bench.PhaseStress {
				ps.Completed, ps.UniqueDupesRun = 850, n(2)
			}
		}
	}
	// The table only: the page without its charts (Write draws them; the
	// tests of Write check them).
	raw, err := pageHTML(sum, groupSamples(samples), nil)
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	for _, want := range []string{"<th>completed / expected</th>", "<th>sched late p99 (ms)</th>", "fail=20,sched=20,unique=10",
		`<span class="ok">900 / 900 (100.00%)</span>`, `<span class="behind">850 / 900 (94.44%)</span>`, `<td class="ph bad">0 / 2</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	if raw, err = pageHTML(syntheticSummary(samples), groupSamples(samples), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "completed / expected") {
		t.Errorf("report.html without --mix has the mix columns")
	}
}

// TestOfferedUnderneath: the throughput chart's reference rates (offered,
// and a mix's expected rate) are grey, solid, and drawn before every
// strategy, so that a strategy keeping up runs along them in its own
// colour instead of hiding under them; the offered line is thinner than a
// strategy's.
func TestOfferedUnderneath(t *testing.T) {
	samples := synthetic()
	for i := range samples {
		samples[i].Cancelled, samples[i].Deduplicated = 5, 10
	}
	ss := groupSamples(samples)
	for _, c := range buildCharts(ss) {
		if c.file != fileThroughput {
			continue
		}
		drawn := drawOrder(c.lines)
		refs := 0
		for i, l := range drawn {
			if l.legend != "" {
				continue // a strategy's line
			}
			refs++
			for _, later := range drawn[:i] {
				if later.legend != "" {
					t.Errorf("a reference rate is drawn after %s's line, over it", later.legend)
				}
			}
			r, g, b, _ := l.color.RGBA()
			if r != g || g != b || r == 0 || r == 0xffff || len(l.dashes) > 0 {
				t.Errorf("a reference rate drawn in %v with dashes %v: want grey and solid", l.color, l.dashes)
			}
			for _, s := range ss {
				if reflect.DeepEqual(s.color, l.color) {
					t.Errorf("a reference rate is drawn in %s's colour", s.name)
				}
			}
		}
		if refs != 2 {
			t.Fatalf("%d reference lines; want offered and expected", refs)
		}
		var offered *legendEntry
		for i := range c.legend {
			if c.legend[i].text == "offered" {
				offered = &c.legend[i]
			}
		}
		if offered == nil || !reflect.DeepEqual(offered.color, offeredColor) || offered.width >= singleStyle.lineWidth || len(offered.dashes) > 0 {
			t.Errorf("offered legend entry: %+v; want thin, grey, solid", offered)
		}
		return
	}
	t.Fatal("no throughput chart")
}

// TestOneMeaningForDashes: in every chart, and in the overview's legend,
// dashes mean the p50 claim latency and nothing else (not the offered
// rate, not a history, not a strategy among others).
func TestOneMeaningForDashes(t *testing.T) {
	var samples []bench.Sample
	for _, name := range []string{"skiplocked", "que", "millrace", "cursor", "skiplocked-batch"} {
		for i := range 100 {
			samples = append(samples, bench.Sample{Strategy: name, Phase: bench.PhaseStress, T: float64(i), XminAgeS: float64(i),
				Offered: 100, Completed: 100, Cancelled: 5, Deduplicated: 5, StorageBytes: 4e6, HistoryBytes: 1e6, ClaimP50: 1, ClaimP99: 2})
		}
	}
	charts := buildCharts(groupSamples(samples))
	for _, c := range charts {
		for _, l := range c.lines {
			if len(l.dashes) > 0 && c.file != fileClaimLatency {
				t.Errorf("%s: a dashed line (%s) outside the claim latency chart", c.file, l.legend)
			}
		}
		for _, e := range c.legend {
			if len(e.dashes) > 0 && e.text != "p50" {
				t.Errorf("%s: legend entry %q is dashed", c.file, e.text)
			}
		}
	}
	for _, e := range overviewLegend(charts, groupSamples(samples), true) {
		if len(e.dashes) > 0 && e.text != "p50 claim latency" {
			t.Errorf("overview legend entry %q is dashed", e.text)
		}
	}
}

// TestZeroLineClearsAxis: a strategy whose backlog stays at zero draws its
// line above the x axis, not on it: the y range reaches a little below
// zero, without a negative tick label.
func TestZeroLineClearsAxis(t *testing.T) {
	var samples []bench.Sample
	for i := range 100 {
		samples = append(samples,
			bench.Sample{Strategy: "millrace", Phase: bench.PhaseStress, T: float64(i), Backlog: 0},
			bench.Sample{Strategy: "skiplocked", Phase: bench.PhaseStress, T: float64(i), Backlog: int64(i * 4000)})
	}
	ss := groupSamples(samples)
	for _, c := range buildCharts(ss) {
		if c.file != fileBacklog {
			continue
		}
		p, err := newPlot(c, stressBand(ss), overviewStyle)
		if err != nil {
			t.Fatal(err)
		}
		if !(p.Y.Min < 0) || -p.Y.Min < 0.01*p.Y.Max {
			t.Errorf("backlog y range [%v, %v]: a line at zero lies on the x axis", p.Y.Min, p.Y.Max)
		}
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label != "" && tk.Value < 0 {
				t.Errorf("negative tick label %q on the backlog axis", tk.Label)
			}
		}
		return
	}
	t.Fatal("no backlog chart")
}

// TestXminAgeDistinct checks that strategies whose xmin ages coincide stay
// apart: each line has its own marker, later lines are thinner (they lie
// inside the earlier ones), and no two lines put a marker on the same
// point.
func TestXminAgeDistinct(t *testing.T) {
	var samples []bench.Sample
	names := []string{"skiplocked", "que", "millrace", "cursor", "skiplocked-batch"}
	for _, name := range names {
		for i := range 100 {
			samples = append(samples, bench.Sample{Strategy: name, Phase: bench.PhaseStress, T: float64(i), XminAgeS: float64(i)})
		}
	}
	for _, c := range buildCharts(groupSamples(samples)) {
		if c.file != fileXminAge {
			continue
		}
		if len(c.lines) != len(names) {
			t.Fatalf("%d lines", len(c.lines))
		}
		marks := map[int]string{}
		for i, l := range c.lines {
			if l.marker == nil || len(l.markAt) < markersPerLine/2 {
				t.Fatalf("%s: marker %v at %v", names[i], l.marker, l.markAt)
			}
			for _, j := range l.markAt {
				if other, ok := marks[j]; ok {
					t.Errorf("%s and %s both mark point %d", other, names[i], j)
				}
				marks[j] = names[i]
			}
			if e := c.legend[i]; e.marker != l.marker || e.width != l.width {
				t.Errorf("%s: legend entry does not show the line's style", names[i])
			}
			for k := range i {
				o := c.lines[k]
				if o.marker == l.marker {
					t.Errorf("%s and %s look alike", names[k], names[i])
				}
				if o.width <= l.width {
					t.Errorf("%s (%v) is not thinner than %s (%v), drawn before it", names[i], l.width, names[k], o.width)
				}
			}
		}
		one := groupSamples(samples[:100])
		for _, c := range buildCharts(one) {
			if c.file == fileXminAge && (c.lines[0].marker != nil || c.lines[0].dashes != nil) {
				t.Errorf("a lone strategy's xmin line is styled apart from nothing: %+v", c.lines[0])
			}
		}
		return
	}
	t.Fatal("no xmin age chart")
}

// TestDeadTuplesLagCaption checks that dead tuples rising after the pin is
// released are explained under the chart, in general and for this run.
func TestDeadTuplesLagCaption(t *testing.T) {
	if c := captions[fileDeadTuples]; !strings.Contains(c, "autovacuum") || !strings.Contains(c, "after the stress band ends") {
		t.Errorf("the dead tuples caption does not say why the count lags: %q", c)
	}
	var samples []bench.Sample
	for i := range 60 {
		ph := bench.PhaseClean
		switch {
		case i >= 40:
			ph = bench.PhaseRecovery
		case i >= 10:
			ph = bench.PhaseStress
		}
		dead := int64(1000)
		switch {
		case i >= 10 && i < 50:
			dead = int64(1000 + 500*(i-9)) // rises through stress and 10 s beyond it
		case i >= 50:
			dead = 2000 // autovacuum got to the table
		}
		samples = append(samples,
			bench.Sample{Strategy: "skiplocked", Phase: ph, T: float64(i), DeadTuples: dead},
			bench.Sample{Strategy: "millrace", Phase: ph, T: float64(i), DeadTuples: 100})
	}
	got := deadTuplesLag(groupSamples(samples))
	if !strings.Contains(got, "skiplocked's count rose for 10 s after the pin was released (16k to 21k) until autovacuum got to it") {
		t.Errorf("lag: %q", got)
	}
	if strings.Contains(got, "millrace") {
		t.Errorf("a flat count is reported as lagging: %q", got)
	}
	raw, err := pageHTML(nil, groupSamples(samples), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "In this run: skiplocked&#39;s count rose for 10 s") {
		t.Errorf("report.html does not explain this run's lag")
	}
	if deadTuplesLag(groupSamples(synthetic())) != "" {
		t.Errorf("the synthetic run's dead tuples fall at the release, but a lag is reported")
	}
}

// TestVerdictWorkersAndHistory: the report says the run in one line (in
// the HTML and across the top of the overview, which the summary text
// and summary.json carry too), gives each strategy's worker count with why
// it ran that many, says on the storage chart and in its caption that
// millrace's storage includes its history, and its overview leaves no
// quarter blank (it had six charts and the legend in a grid two wide: the
// last row was the legend and an empty tile).
func TestVerdictWorkersAndHistory(t *testing.T) {
	dir := t.TempDir()
	samples := synthetic()
	sum := syntheticSummary(samples)
	sum.Workers = 0
	sum.Strategies["millrace"].Workers = bench.GoroutineWorkers
	sum.Strategies["skiplocked"].Workers = bench.DefaultWorkers
	if err := Write(dir, sum, samples); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	html := strings.ReplaceAll(string(raw), "&#39;", "'")
	verdict := bench.Verdict(sum)
	if !strings.HasPrefix(verdict, "In the stress phase millrace held ") || !strings.Contains(verdict, ", while skiplocked fell to ") {
		t.Errorf("verdict of the synthetic run: %q", verdict)
	}
	for _, want := range []string{
		`<p class="verdict" id="verdict">` + verdict + `</p>`,
		"millrace 2000 (" + bench.WhyGoroutineWorkers + "), skiplocked 32 (" + bench.WhyDefaultWorkers + ")",
		"In this run millrace's storage includes its history of finished jobs",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, c := range buildCharts(groupSamples(samples)) {
		if c.file == fileStorage && !strings.Contains(c.title, "millrace's storage includes its history") {
			t.Errorf("the storage chart's title does not say millrace's storage includes its history: %q", c.title)
		}
	}

	// The overview: every eighth of its height has something drawn in its
	// right half as in its left (a blank tile, a quarter of the height
	// before, is all white).
	f, err := os.Open(filepath.Join(dir, fileOverview))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	for q := range 8 {
		for half := range 2 {
			x0, x1 := r.Min.X+half*r.Dx()/2, r.Min.X+(half+1)*r.Dx()/2
			y0, y1 := r.Min.Y+q*r.Dy()/8, r.Min.Y+(q+1)*r.Dy()/8
			inked, all := 0, 0
			for y := y0; y < y1; y += 2 {
				for x := x0; x < x1; x += 2 {
					all++
					if cr, cg, cb, _ := img.At(x, y).RGBA(); cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
						inked++
					}
				}
			}
			if share := float64(inked) / float64(all); share < 0.01 {
				t.Errorf("the overview's eighth %d of 8 (from the top), %s half, is blank: %.2f%% drawn", q+1, []string{"left", "right"}[half], 100*share)
			}
		}
	}
}
