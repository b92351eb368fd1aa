package report

// Browser test: report.html in a real headless Chromium, driven with
// chromedp, as the dashboard's browser tests are (ui/browser_test.go). It
// needs Debian's chromium package (`apt-get install chromium`, which
// .ci/run does when it is missing): without it, it fails under CI=true and
// is skipped otherwise. Set MILLRACE_CHROMIUM to use another binary.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/millrace/millrace/internal/bench"
)

// needChromium returns the browser's path; without one it fails the test
// under CI=true and skips it otherwise.
func needChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MILLRACE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found on PATH (chromium, chromium-browser, google-chrome); install it with `apt-get install chromium` or set MILLRACE_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal("browser test: " + msg)
	}
	t.Skip("browser test: " + msg)
	return ""
}

// TestBrowserReportTableFits: in a 1,400 px wide window, the summary table
// of the widest report (a --mix run, every column) fits: the page does not
// scroll sideways and the table does not overflow its box.
func TestBrowserReportTableFits(t *testing.T) {
	path := needChromium(t)
	samples := synthetic()
	sum := syntheticSummary(samples)
	n := func(v int64) *int64 { return &v }
	f := func(v float64) *float64 { return &v }
	sum.Mix = &bench.Mix{Fail: 20, Sched: 20, Unique: 10}
	for _, st := range sum.Strategies {
		for _, ps := range st.Phases {
			ps.Offered, ps.Expected, ps.Completed = 1000, 900, 900
			ps.Cancelled, ps.Deduplicated, ps.CancelledRun, ps.UniqueDupesRun = n(50), n(50), n(0), n(0)
			ps.SchedLateP99MS, ps.SchedLateMaxMS, ps.RetryLateP99MS = f(12.5), f(40), f(8)
		}
	}
	dir := t.TempDir()
	if err := Write(dir, sum, samples); err != nil {
		t.Fatal(err)
	}

	const width, height = 1400, 900
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	// Starts the browser (no timeout on this first call: it would bound
	// the browser's life).
	if err := chromedp.Do(bctx, chromedp.Func(func(context.Context, *chromedp.Target) error { return nil })); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(bctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(dir, HTMLFile)),
		chromedp.WaitVisible(chromedp.CSS("table"))); err != nil {
		t.Fatal(err)
	}
	type measures struct {
		Inner, PageScroll, Table, Box, TableRight float64
	}
	m, err := chromedp.Run(ctx, chromedp.Evaluate[measures](`(() => {
		const t = document.querySelector("table");
		return {
			Inner: window.innerWidth,
			PageScroll: document.documentElement.scrollWidth,
			Table: t.scrollWidth,
			Box: t.parentElement.clientWidth,
			TableRight: t.getBoundingClientRect().right,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("window %v px: page %v px wide, table %v px in a box of %v px, its right edge at %v px", m.Inner, m.PageScroll, m.Table, m.Box, m.TableRight)
	if m.Inner < width-40 {
		t.Fatalf("the window is %v px wide, not about %d", m.Inner, width)
	}
	if m.PageScroll > m.Inner || m.TableRight > m.Inner {
		t.Errorf("the page scrolls sideways: %v px wide in a %v px window (the table's right edge at %v px)", m.PageScroll, m.Inner, m.TableRight)
	}
	if m.Table > m.Box {
		t.Errorf("the table (%v px) overflows its box (%v px)", m.Table, m.Box)
	}
}
