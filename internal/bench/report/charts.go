package report

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/millrace/millrace/internal/bench"
)

// Rendering geometry: charts are drawn at chartDPI, so a 10in x 5in chart is
// 1000x500 pixels.
const (
	chartDPI    = 100
	chartWidth  = 10 * vg.Inch
	chartHeight = 5 * vg.Inch

	overviewWidth   = 21 * vg.Inch
	overviewRowHigh = 4.5 * vg.Inch // the overview is as tall as its rows of tiles need

	// latencyFloorMS is what zero (or negative) latencies are clamped to so
	// that they can be drawn on a log scale.
	latencyFloorMS = 0.01
)

// Chart file names, in the order they appear in the report.
const (
	fileBacklog      = "backlog.png"
	fileClaimLatency = "claim_latency.png"
	fileThroughput   = "throughput.png"
	fileDeadTuples   = "dead_tuples.png"
	fileXminAge      = "xmin_age.png"
	fileStorage      = "storage.png"
	fileOverview     = "overview.png"
)

// knownColors fixes the colour of the strategies millrace ships with, so that
// a strategy looks the same in every chart and in every report.
var knownColors = map[string]color.Color{
	"millrace":         rgb(0x2ca02c), // green
	"skiplocked":       rgb(0xd62728), // red
	"skiplocked-batch": rgb(0xff7f0e), // orange
	"skiplocked-lifo":  rgb(0x17becf), // cyan
	"que":              rgb(0x9467bd), // purple
	"cursor":           rgb(0x1f77b4), // blue
	"river":            rgb(0x8c564b), // brown
}

// fallbackColors are handed out, in order, to strategies not in knownColors.
var fallbackColors = []color.Color{
	rgb(0xe377c2), // pink
	rgb(0xbcbd22), // olive
	rgb(0x7f7f7f), // grey
	rgb(0x393b79), // indigo
	rgb(0x637939), // moss
	rgb(0x8c6d31), // ochre
	rgb(0x843c39), // maroon
}

// How the lines look. Dashes mean one thing in every chart: the p50 claim
// latency (p99 is solid). The reference rates of the throughput chart are
// grey, no strategy's colour, solid, and drawn underneath the strategies,
// so that a strategy keeping up runs along them in its own colour: the
// offered rate thin and dark, the expected rate of a --mix run broad and
// light. A history's storage is a strategy's thin line.
var (
	offeredColor   = color.NRGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff}
	offeredWidth   = vg.Points(1.25)
	expectedColor  = color.NRGBA{R: 0xc8, G: 0xc8, B: 0xc8, A: 0xff}
	expectedWidth  = vg.Points(7)
	historyWidth   = vg.Points(1)
	bandColor      = color.NRGBA{R: 0xff, G: 0x30, B: 0x30, A: 0x2a}
	bandTextColor  = color.NRGBA{R: 0xb0, G: 0x20, B: 0x20, A: 0xff}
	gridColor      = color.NRGBA{R: 0xe0, G: 0xe0, B: 0xe0, A: 0xff}
	dashed         = []vg.Length{vg.Points(6), vg.Points(4)}
	zeroPadPercent = 3.0 // of a linear y range, below zero: a line at zero clears the x axis
)

func rgb(v uint32) color.Color {
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// series is one strategy's samples, in time order.
type series struct {
	name    string
	color   color.Color
	samples []bench.Sample
}

// band is the stretch of the x axis to shade, from the stress phase.
type band struct {
	from, to float64
	ok       bool
	// marks are the chaos scenario's faults: a dashed vertical line each,
	// labelled with its kind.
	marks []mark
}

// mark is one fault on the time axis.
type mark struct {
	x     float64
	label string
}

// groupSamples splits samples by strategy, keeping the order in which the
// strategies first appear (the order they ran in), and sorts each by T.
func groupSamples(samples []bench.Sample) []series {
	idx := map[string]int{}
	var out []series
	for _, s := range samples {
		i, ok := idx[s.Strategy]
		if !ok {
			i = len(out)
			idx[s.Strategy] = i
			out = append(out, series{name: s.Strategy})
		}
		out[i].samples = append(out[i].samples, s)
	}
	next := 0
	for i := range out {
		sort.SliceStable(out[i].samples, func(a, b int) bool {
			return out[i].samples[a].T < out[i].samples[b].T
		})
		if c, ok := knownColors[out[i].name]; ok {
			out[i].color = c
			continue
		}
		out[i].color = fallbackColors[next%len(fallbackColors)]
		next++
	}
	return out
}

// stressBand is the first to the last T whose phase is stress, from the first
// strategy that has stress samples.
func stressBand(ss []series) band {
	for _, s := range ss {
		b := band{from: math.Inf(1), to: math.Inf(-1)}
		for _, x := range s.samples {
			if x.Phase == bench.PhaseStress {
				b.ok = true
				b.from = math.Min(b.from, x.T)
				b.to = math.Max(b.to, x.T)
			}
		}
		if b.ok {
			return b
		}
	}
	return band{}
}

// line is one drawn line: a strategy's metric, or a reference line.
type line struct {
	legend string // empty: no legend entry of its own
	color  color.Color
	dashes []vg.Length
	width  vg.Length
	// marker, when set, is drawn at the points markAt picks, so that lines
	// lying on top of each other can still be told apart.
	marker draw.GlyphDrawer
	markAt []int
	// under lines are drawn before every other line (the reference rates),
	// so that no strategy hides under them.
	under bool
	xys   plotter.XYs
}

// legendEntry is one row of a chart's legend.
type legendEntry struct {
	text string
	// overview, when set, puts the entry in the overview's shared legend
	// under this text (entries every chart has are added there anyway).
	overview string
	color    color.Color
	dashes   []vg.Length
	width    vg.Length // 0: the chart's line width
	marker   draw.GlyphDrawer
}

// Distinct line styles, handed out in run order, for charts where every
// strategy usually draws the same line (the xmin age: the scenario's pin is
// the same for all): each strategy gets a width that shrinks with its place
// (so that a later line lies inside an earlier one instead of covering it)
// and its own marker shape, placed at points staggered per strategy so that
// markers of equal lines do not coincide. No dashes: they mean p50.
var (
	lineMarkers = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
		draw.RingGlyph{}, draw.PlusGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{},
	}
)

// markersPerLine is how many markers a distinctly styled line carries.
const markersPerLine = 8

// distinct styles line i of n (in run order) for a chart of overlapping
// lines, and places its markers.
func distinct(l line, i, n int) line {
	// From 5.5 pt for the first to 1.5 pt for the last, so that every line
	// shows at least a rim around the ones drawn over it.
	l.width = vg.Points(5.5 - 4*float64(i)/float64(max(n-1, 1)))
	l.marker = lineMarkers[i%len(lineMarkers)]
	if len(l.xys) > 0 {
		step := float64(len(l.xys)) / markersPerLine
		for k := range markersPerLine {
			j := int(step*(float64(k)+(float64(i)+0.5)/float64(max(n, 1))) + 0.5)
			if j < len(l.xys) {
				l.markAt = append(l.markAt, j)
			}
		}
	}
	return l
}

// hasHistory reports whether any of ss keeps a history (see
// bench.Historian): a sample with history bytes.
func hasHistory(ss []series) bool {
	for _, s := range ss {
		for _, x := range s.samples {
			if x.HistoryBytes > 0 {
				return true
			}
		}
	}
	return false
}

// historyNames are the strategies of ss whose storage includes a history
// (finished jobs kept for their retention): those whose samples say so,
// and millrace, whose storage has always included millrace.finished (a
// run saved before the samples had history bytes says nothing of it).
func historyNames(ss []series) []string {
	var out []string
	for _, s := range ss {
		if s.name == "millrace" || hasHistory([]series{s}) {
			out = append(out, s.name)
		}
	}
	return out
}

// historyNote says whose storage includes a history of finished jobs, ""
// when no strategy's does: a queue that keeps its finished jobs is not
// compared like for like with one that deletes them.
func historyNote(ss []series) string {
	names := historyNames(ss)
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0] + "'s storage includes its history of finished jobs"
	}
	return strings.Join(names[:len(names)-1], "'s, ") + "'s and " + names[len(names)-1] +
		"'s storage include their history of finished jobs"
}

// chart is everything needed to draw one of the charts.
type chart struct {
	file   string
	title  string
	ylabel string
	log    bool
	lines  []line
	legend []legendEntry
}

// buildCharts turns the grouped samples into the six metric charts.
func buildCharts(ss []series) []chart {
	metric := func(file, title, ylabel string, v func(bench.Sample) float64) chart {
		c := chart{file: file, title: title, ylabel: ylabel}
		for _, s := range ss {
			c.lines = append(c.lines, line{legend: s.name, color: s.color, xys: xys(s.samples, v)})
			c.legend = append(c.legend, legendEntry{text: s.name, color: s.color})
		}
		return c
	}

	backlog := metric(fileBacklog, "Backlog", "backlog (jobs)",
		func(s bench.Sample) float64 { return float64(s.Backlog) })

	clamp := func(v float64) float64 {
		if !(v >= latencyFloorMS) { // also catches NaN
			return latencyFloorMS
		}
		return v
	}
	latency := chart{file: fileClaimLatency, title: "Claim latency, log scale (p99 solid, p50 dashed)",
		ylabel: "claim latency (ms)", log: true}
	for _, s := range ss {
		latency.lines = append(latency.lines,
			line{color: s.color, xys: xys(s.samples, func(x bench.Sample) float64 { return clamp(x.ClaimP99) })},
			line{color: s.color, dashes: dashed, xys: xys(s.samples, func(x bench.Sample) float64 { return clamp(x.ClaimP50) })},
		)
		latency.legend = append(latency.legend, legendEntry{text: s.name, color: s.color})
	}
	black := color.Black
	latency.legend = append(latency.legend,
		legendEntry{text: "p99", color: black},
		legendEntry{text: "p50", color: black, dashes: dashed})

	throughput := metric(fileThroughput, "Throughput", "completed (jobs/s)",
		func(s bench.Sample) float64 { return float64(s.Completed) })
	if len(ss) > 0 {
		// Every strategy runs the same schedule; take the offered rate
		// from the longest run.
		longest := ss[0]
		for _, s := range ss[1:] {
			if len(s.samples) > len(longest.samples) {
				longest = s
			}
		}
		offered := xys(longest.samples, func(s bench.Sample) float64 { return float64(s.Offered) })
		hasOffered := false
		for _, p := range offered {
			hasOffered = hasOffered || p.Y != 0
		}
		if hasOffered {
			// Thin, grey, under the strategies: the throughput of a
			// strategy that keeps up runs along it, in its own colour.
			throughput.lines = append(throughput.lines,
				line{color: offeredColor, width: offeredWidth, under: true, xys: offered})
			throughput.legend = append(throughput.legend,
				legendEntry{text: "offered", color: offeredColor, width: offeredWidth})
		}
		// With --mix, cancelled and de-duplicated jobs never run: the
		// jobs that should run (offered minus both) are drawn too, a
		// broad light band under the strategies, so that a strategy
		// keeping up is seen to.
		mixed := false
		for _, s := range longest.samples {
			mixed = mixed || s.Cancelled != 0 || s.Deduplicated != 0
		}
		if hasOffered && mixed {
			expected := xys(longest.samples, func(s bench.Sample) float64 { return float64(s.Offered - s.Cancelled - s.Deduplicated) })
			throughput.lines = append(throughput.lines,
				line{color: expectedColor, width: expectedWidth, under: true, xys: expected})
			throughput.legend = append(throughput.legend,
				legendEntry{text: "expected (offered less cancelled and de-duplicated)", overview: "expected rate (throughput)",
					color: expectedColor, width: expectedWidth})
		}
	}

	dead := metric(fileDeadTuples, "Dead tuples (all of the strategy's tables)\n"+deadTuplesNote, "dead tuples",
		func(s bench.Sample) float64 { return float64(s.DeadTuples) })
	// Every strategy runs the same scenario, so their xmin ages usually
	// coincide: distinct dashes, widths and markers keep each visible.
	xmin := metric(fileXminAge, "Age of the oldest xmin", "xmin held (s)",
		func(s bench.Sample) float64 { return s.XminAgeS })
	for i := range xmin.lines {
		if len(xmin.lines) < 2 {
			break // one line hides nothing
		}
		xmin.lines[i] = distinct(xmin.lines[i], i, len(xmin.lines))
		xmin.legend[i].width = xmin.lines[i].width
		xmin.legend[i].marker = xmin.lines[i].marker
	}
	// Whose storage includes a history is said on the chart, under its
	// title: it is not the same thing as a queue that deletes its jobs.
	note := ""
	if n := historyNote(ss); n != "" {
		note = "\n(" + n + ")"
	}
	storage := metric(fileStorage, "Storage (heap + indexes + TOAST of the strategy's tables)"+note, "storage (MB)",
		func(s bench.Sample) float64 { return float64(s.StorageBytes) / 1e6 })
	if hasHistory(ss) {
		// A history grows with its retention, not with the queue: the
		// queue's tables a strategy's usual line, the history a thin one.
		storage = metric(fileStorage, "Storage (heap + indexes + TOAST): queue, and history thin"+note, "storage (MB)",
			func(s bench.Sample) float64 { return float64(s.StorageBytes-s.HistoryBytes) / 1e6 })
		for _, s := range ss {
			if hasHistory([]series{s}) {
				storage.lines = append(storage.lines, line{color: s.color, width: historyWidth,
					xys: xys(s.samples, func(x bench.Sample) float64 { return float64(x.HistoryBytes) / 1e6 })})
			}
		}
		storage.legend = append(storage.legend,
			legendEntry{text: "queue", color: black},
			legendEntry{text: "history (finished jobs, kept for their retention)", overview: "history (storage, thin)", color: black, width: historyWidth})
	}

	return []chart{backlog, latency, throughput, dead, xmin, storage}
}

// deadTuplesNote is the dead-tuple chart's second title line: the count
// that goes on rising after the stress band is not a chart error.
const deadTuplesNote = "(the count lags the pin: autovacuum must get to the table first)"

func xys(samples []bench.Sample, v func(bench.Sample) float64) plotter.XYs {
	out := make(plotter.XYs, 0, len(samples))
	for _, s := range samples {
		y := v(s)
		if math.IsNaN(y) || math.IsInf(y, 0) || math.IsNaN(s.T) || math.IsInf(s.T, 0) {
			continue
		}
		out = append(out, plotter.XY{X: s.T, Y: y})
	}
	return out
}

// style sizes a chart's text and lines. The overview gets a larger legend:
// it shares one legend tile between all its charts.
type style struct {
	title, label, tick, legend vg.Length
	lineWidth                  vg.Length
}

var (
	singleStyle   = style{title: 17, label: 13, tick: 11, legend: 13, lineWidth: 2}
	overviewStyle = style{title: 15, label: 13, tick: 11, legend: 16, lineWidth: 2}
)

// newPlot draws chart c as a gonum plot, with the stress band b behind the
// lines, and without a legend (see newLegend).
func newPlot(c chart, b band, st style) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Title.TextStyle.Font.Size = st.title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "time since the strategy's run started (s)"
	p.Y.Label.Text = c.ylabel
	p.X.Tick.Marker = humanTicks{}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = st.label
		a.Tick.Label.Font.Size = st.tick
	}

	// Data range over all lines, then the band, so the band can span it.
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, l := range c.lines {
		for _, pt := range l.xys {
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		}
	}
	if b.ok {
		xmin, xmax = math.Min(xmin, b.from), math.Max(xmax, b.to)
	}
	if math.IsInf(xmin, 0) || math.IsInf(xmax, 0) {
		xmin, xmax = 0, 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if c.log {
		if math.IsInf(ymin, 0) || math.IsInf(ymax, 0) {
			ymin, ymax = latencyFloorMS, 1
		}
		ymin = math.Max(ymin, latencyFloorMS)
		ymax = math.Max(ymax, ymin)
		// Whole decades, so there are always labelled ticks.
		ymin = math.Pow(10, math.Floor(math.Log10(ymin)))
		ymax = math.Pow(10, math.Ceil(math.Log10(ymax)))
		if ymax <= ymin {
			ymax = ymin * 10
		}
		// The axis is linear in log10(y) rather than a plot.LogScale:
		// gonum places the y axis label at the arithmetic middle of the
		// range, which on a log scale pushes it (and the padding it
		// reserves) far above the plot.
		ymin, ymax = math.Log10(ymin), math.Log10(ymax)
		p.Y.Tick.Marker = log10Ticks{}
		lines := make([]line, len(c.lines))
		for i, l := range c.lines {
			l.xys = append(plotter.XYs(nil), l.xys...)
			for j := range l.xys {
				l.xys[j].Y = math.Log10(math.Max(l.xys[j].Y, latencyFloorMS))
			}
			lines[i] = l
		}
		c.lines = lines
	} else {
		if math.IsInf(ymin, 0) || math.IsInf(ymax, 0) {
			ymin, ymax = 0, 1
		}
		ymin = math.Min(ymin, 0)
		ymax *= 1.05 // headroom for the band label
		if ymax <= ymin {
			ymax = ymin + 1
		}
		if ymin == 0 {
			// A strategy that keeps up draws a line at zero (its backlog):
			// keep it clear of the x axis, which would hide it.
			ymin = -(ymax * zeroPadPercent / 100)
		}
		p.Y.Tick.Marker = humanTicks{}
	}

	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	p.Add(grid)

	if b.ok {
		from, to := b.from, b.to
		if to <= from {
			to = from + 1
		}
		poly, err := plotter.NewPolygon(plotter.XYs{
			{X: from, Y: ymin}, {X: to, Y: ymin}, {X: to, Y: ymax}, {X: from, Y: ymax},
		})
		if err != nil {
			return nil, fmt.Errorf("stress band: %w", err)
		}
		poly.Color = bandColor
		poly.LineStyle.Width = 0
		p.Add(poly)

		lbl, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: from, Y: ymax}},
			Labels: []string{"stress"},
		})
		if err != nil {
			return nil, fmt.Errorf("stress label: %w", err)
		}
		for i := range lbl.TextStyle {
			lbl.TextStyle[i].Color = bandTextColor
			lbl.TextStyle[i].Font.Size = st.label
			lbl.TextStyle[i].XAlign = draw.XLeft
			lbl.TextStyle[i].YAlign = draw.YTop
		}
		lbl.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(-3)}
		p.Add(lbl)
	}

	for i, m := range b.marks {
		ln, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: ymin}, {X: m.x, Y: ymax}})
		if err != nil {
			return nil, fmt.Errorf("fault mark: %w", err)
		}
		ln.LineStyle.Color = bandTextColor
		ln.LineStyle.Width = vg.Points(0.8)
		ln.LineStyle.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(ln)
		// Labels alternate between two heights, so that close faults stay
		// readable.
		y := ymax
		if c.log {
			y = ymax / math.Pow(1.6, float64(1+i%2))
		} else {
			y = ymax - (ymax-ymin)*0.06*float64(1+i%2)
		}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: m.x, Y: y}}, Labels: []string{m.label}})
		if err != nil {
			return nil, fmt.Errorf("fault label: %w", err)
		}
		for j := range lbl.TextStyle {
			lbl.TextStyle[j].Color = bandTextColor
			lbl.TextStyle[j].Font.Size = st.tick
			lbl.TextStyle[j].XAlign = draw.XLeft
		}
		lbl.Offset = vg.Point{X: vg.Points(2)}
		p.Add(lbl)
	}

	for _, l := range drawOrder(c.lines) {
		if len(l.xys) == 0 {
			continue
		}
		pl, err := plotter.NewLine(l.xys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.title, err)
		}
		pl.LineStyle.Color = l.color
		pl.LineStyle.Width = st.lineWidth
		if l.width > 0 {
			pl.LineStyle.Width = l.width
		}
		pl.LineStyle.Dashes = l.dashes
		p.Add(pl)
		if l.marker != nil && len(l.markAt) > 0 {
			pts := make(plotter.XYs, 0, len(l.markAt))
			for _, j := range l.markAt {
				pts = append(pts, l.xys[j])
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.title, err)
			}
			sc.GlyphStyle = markerStyle(l.color, l.marker)
			p.Add(sc)
		}
	}

	// Fix the ranges last: Add widens them to fit labels and lines.
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = ymin, ymax
	return p, nil
}

// drawOrder returns lines in the order they are drawn: as given, with the
// under lines (the reference rates) first so that they cover no strategy.
func drawOrder(lines []line) []line {
	out := make([]line, 0, len(lines))
	for _, under := range []bool{true, false} {
		for _, l := range lines {
			if l.under == under {
				out = append(out, l)
			}
		}
	}
	return out
}

func markerStyle(c color.Color, shape draw.GlyphDrawer) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(5), Shape: shape}
}

// legendThumb draws a legend entry's line and, when it has one, its marker.
type legendThumb struct {
	line   *plotter.Line
	marker draw.GlyphDrawer
	color  color.Color
}

// Thumbnail implements plot.Thumbnailer.
func (t legendThumb) Thumbnail(c *draw.Canvas) {
	t.line.Thumbnail(c)
	if t.marker != nil {
		c.DrawGlyph(markerStyle(t.color, t.marker), vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
	}
}

// newLegend builds a legend for entries, to be drawn beside (never over) the
// plot area.
func newLegend(entries []legendEntry, size, width vg.Length) (plot.Legend, error) {
	lg := plot.NewLegend()
	lg.TextStyle.Font.Size = size
	lg.Top = true
	lg.Left = true
	lg.ThumbnailWidth = vg.Points(36)
	lg.Padding = vg.Points(4)
	for _, e := range entries {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
		if err != nil {
			return lg, err
		}
		l.LineStyle.Color = e.color
		l.LineStyle.Width = width
		if e.width > 0 {
			l.LineStyle.Width = e.width
		}
		l.LineStyle.Dashes = e.dashes
		lg.Add(e.text, legendThumb{line: l, marker: e.marker, color: e.color})
	}
	return lg, nil
}

// renderChart draws one chart with its legend at its right into PNG bytes.
func renderChart(c chart, b band) ([]byte, error) {
	p, err := newPlot(c, b, singleStyle)
	if err != nil {
		return nil, err
	}
	lg, err := newLegend(c.legend, singleStyle.legend, singleStyle.lineWidth)
	if err != nil {
		return nil, err
	}
	img := vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)

	pad := vg.Points(10)
	lw := lg.Rectangle(dc).Size().X + pad
	p.Draw(draw.Crop(dc, 0, -lw-pad, 0, 0))
	// Start the legend level with the top of the plotting area.
	lc := draw.Crop(dc, dc.Size().X-lw, -pad, 0, -(p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + pad))
	lg.Draw(lc)
	return encodePNG(img)
}

// renderOverview draws every chart in a grid three tiles wide (the six
// charts fill two rows: no tile is left empty), the verdict, when there is
// one, as a line across the top, and one shared legend in a column at the
// right, as high as the grid.
func renderOverview(charts []chart, ss []series, b band, offered bool, verdict string) ([]byte, error) {
	const cols = 3
	rows := max((len(charts)+cols-1)/cols, 1)
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
	}
	for i, c := range charts {
		p, err := newPlot(c, b, overviewStyle)
		if err != nil {
			return nil, err
		}
		grid[i/cols][i%cols] = p
	}

	entries := overviewLegend(charts, ss, offered)
	lg, err := newLegend(entries, overviewStyle.legend, overviewStyle.lineWidth)
	if err != nil {
		return nil, err
	}
	if b.ok {
		lg.Add("stress phase", bandSwatch{})
	}

	vs := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler}
	vs.Font.Size = vg.Points(19)
	top := vg.Length(0)
	if verdict != "" {
		top = vs.Height(verdict) + vg.Points(16)
	}
	img := vgimg.NewWith(vgimg.UseWH(overviewWidth, vg.Length(rows)*overviewRowHigh+top), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)
	if verdict != "" {
		vs.XAlign, vs.YAlign = draw.XCenter, draw.YTop
		dc.FillText(vs, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(8)}, verdict)
	}
	pad := vg.Points(16)
	lw := lg.Rectangle(dc).Size().X + 2*pad
	gc := draw.Crop(dc, 0, -lw, 0, -top)
	tiles := draw.Tiles{
		Rows: rows, Cols: cols,
		PadX: vg.Points(24), PadY: vg.Points(24),
		PadTop: vg.Points(10), PadBottom: vg.Points(10),
		PadLeft: vg.Points(10), PadRight: vg.Points(8),
	}
	canvases := plot.Align(grid, tiles, gc)
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] != nil {
				grid[r][c].Draw(canvases[r][c])
			}
		}
	}
	// The legend in the middle of its column, beside the grid.
	lh := lg.Rectangle(dc).Size().Y
	gap := max((gc.Size().Y-lh)/2, 0)
	lg.Draw(draw.Crop(dc, dc.Size().X-lw+pad, -pad, 0, -top-gap))
	return encodePNG(img)
}

// overviewLegend is the overview's shared legend: each strategy with its
// marker (that of the xmin-age tile, where the strategies' lines are told
// apart by shape as well as colour), the offered rate when drawn, p99 and
// p50, and the entries of one chart that the overview names too (the mix's
// expected rate, a history's storage), when drawn.
func overviewLegend(charts []chart, ss []series, offered bool) []legendEntry {
	var entries []legendEntry
	for i, s := range ss {
		entries = append(entries, legendEntry{text: s.name, color: s.color, marker: lineMarkers[i%len(lineMarkers)]})
	}
	if offered {
		entries = append(entries, legendEntry{text: "offered rate (throughput)", color: offeredColor, width: offeredWidth})
	}
	entries = append(entries,
		legendEntry{text: "p99 claim latency", color: color.Black},
		legendEntry{text: "p50 claim latency", color: color.Black, dashes: dashed})
	for _, c := range charts {
		for _, e := range c.legend {
			if e.overview != "" {
				e.text = e.overview
				entries = append(entries, e)
			}
		}
	}
	return entries
}

// bandSwatch is the legend thumbnail for the stress band.
type bandSwatch struct{}

// Thumbnail implements plot.Thumbnailer.
func (bandSwatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y},
	}
	c.FillPolygon(color.NRGBA{R: 0xff, G: 0x30, B: 0x30, A: 0x50}, c.ClipPolygonXY(pts))
}

func encodePNG(img *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	// Fastest deflate: a chart is flat colour and lines, so it compresses
	// almost as well at level 1 as at the default (the test report's 7
	// charts: 553 KB against 530 KB, written in 346 ms against 587 ms).
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img.Image()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// humanTicks puts about six labelled ticks on a linear axis, at steps of
// 1, 2, 2.5 or 5 times a power of ten, with a minor tick between each, and
// labels like 1.5k and 2M instead of 1500 and 2e+06.
type humanTicks struct{}

// Ticks implements plot.Ticker.
func (humanTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(max-min, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	const want = 6
	raw := (max - min) / want
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	first := math.Ceil(min/step) * step
	if first-step/2 >= min {
		ts = append(ts, plot.Tick{Value: first - step/2})
	}
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > max+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ts = append(ts, plot.Tick{Value: v, Label: human(v)})
		if v+step/2 <= max {
			ts = append(ts, plot.Tick{Value: v + step/2})
		}
	}
	return ts
}

// log10Ticks labels an axis whose values are log10 of the data: a major
// tick at every power of ten, minor ticks at 2..9 times it.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for k := math.Floor(min); k <= math.Ceil(max); k++ {
		if k >= min-1e-9 && k <= max+1e-9 {
			ts = append(ts, plot.Tick{Value: k, Label: human(math.Pow(10, k))})
		}
		for i := 2; i < 10; i++ {
			if v := k + math.Log10(float64(i)); v >= min && v <= max {
				ts = append(ts, plot.Tick{Value: v})
			}
		}
	}
	return ts
}

// human formats v compactly: 950, 1.5k, 12M.
func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	default:
		return trim(v)
	}
}

func trim(v float64) string {
	if a := math.Abs(v); a > 0 && a < 0.1 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
