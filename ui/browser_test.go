package ui_test

// Browser tests: the dashboard in a real headless Chromium, driven over
// the DevTools protocol with chromedp. They need Debian's chromium package
// (`apt-get install chromium`, which .ci/run does when it is missing):
// without it they fail under CI=true and are skipped otherwise. Set
// MILLRACE_CHROMIUM to use another binary, and MILLRACE_SCREENSHOTS=DIR to
// write the pages' screenshots (docs/img for docs/ui.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
	"github.com/millrace/millrace/ui"
)

// chromiumPath finds the browser, or says why there is none.
func chromiumPath() (string, error) {
	if p := os.Getenv("MILLRACE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found on PATH (chromium, chromium-browser, google-chrome); install it with `apt-get install chromium` or set MILLRACE_CHROMIUM")
}

// browserTab is one tab of a headless Chromium that records the console
// errors, uncaught exceptions and browser log errors (failed loads, CSP
// violations) of its pages, and accepts every confirm() dialog.
type browserTab struct {
	ctx     context.Context
	mu      sync.Mutex
	errs    []string
	allowed []string // errors expected of the test, by a substring
}

// allow makes errors that contain s expected: not counted as the pages'.
func (b *browserTab) allow(s string) {
	b.mu.Lock()
	b.allowed = append(b.allowed, s)
	b.mu.Unlock()
}

// needChromium returns the browser's path; without one it fails the test
// under CI=true and skips it otherwise.
func needChromium(t *testing.T) string {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests: %v", err)
		}
		t.Skipf("browser tests: %v", err)
	}
	return path
}

func newBrowser(t *testing.T) *browserTab {
	t.Helper()
	path := needChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(1280, 860),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	b := &browserTab{ctx: ctx}
	// Starts the browser (no timeout on this first call: it would bound the
	// browser's life).
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	record := func(s string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, a := range b.allowed {
			if strings.Contains(s, a) {
				return
			}
		}
		b.errs = append(b.errs, s)
	}
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ConsoleAPICalled) {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				record("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
			}
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ExceptionThrown) {
			if err != nil {
				return
			}
			record((&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, cdplog.EntryAdded) {
			if err != nil {
				return
			}
			if ev.Entry.Level == cdplog.EntryLevelError {
				record("log: " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		}
	}()
	go func() {
		for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	t.Cleanup(func() {
		// Leave the page, so that no poll is in flight when the server goes.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		chromedp.Do(ctx, chromedp.Navigate("about:blank"))
		if errs := b.errors(); len(errs) > 0 {
			t.Errorf("the pages logged errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	return b
}

func (b *browserTab) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// do runs steps with a time limit.
func (b *browserTab) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until the JavaScript expression is truthy.
func (b *browserTab) waitJS(t *testing.T, what, expr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("%s (waited for %s): %v", what, expr, err)
	}
}

// waitJSAcrossLoads waits until the expression is truthy while the page
// may reload: an evaluation cut short by a navigation is tried again.
func (b *browserTab) waitJSAcrossLoads(t *testing.T, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(900*time.Millisecond), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
	}
	t.Fatalf("%s (waited for %s): %v", what, expr, last)
}

func (b *browserTab) eval(t *testing.T, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

// screenshot writes the page to $MILLRACE_SCREENSHOTS/ui_NAME.png when
// that is set.
func (b *browserTab) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("MILLRACE_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // tests run in ui/; the path is from the repository root
	}
	if err := os.WriteFile(filepath.Join(dir, "ui_"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every page loads without a console error; the live charts gain a point
// a second; the job page shows a discarded job's attempt and its error.
func TestBrowserPagesAndLiveCharts(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	for i := 0; i < 3; i++ {
		testkit.Enqueue(t, pool, "email.send", "email", fmt.Sprintf(`{"to":"user%d@example.com"}`, i), 0)
	}
	testkit.Enqueue(t, pool, "report.monthly", "reports", `{"month":"2026-10"}`, time.Hour)
	testkit.Enqueue(t, pool, "image.resize", "images", `{"image":"cat.png","width":640}`, 0)
	discarded := clientkit.Discard(t, pool, "default", "resize: image cat.png: unsupported format")
	clientkit.Work(t, pool, "work", 40)
	runHeld(t, pool, "video", 2, nil) // in flight until the test ends
	policy, err := guard.ParsePolicy("examples/analytics-budget.yaml", []byte("classes:\n  - name: analytics\n    match: {application_name: \"report*\"}\n    max_transaction_age: 5m\n    action: cancel\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui.New(pool, ui.Options{Policy: policy, PolicyName: "examples/analytics-budget.yaml"}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first

	b.do(t, "queues page", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#queues tr[data-queue="email"]`)))
	if got := b.eval(t, `document.querySelector('#queues tr[data-queue="email"] td[data-col="available"]').textContent`); got != "3" {
		t.Errorf("email available: %q, want 3", got)
	}
	// Live: the charts gain points from the JSON endpoint, once a second.
	b.waitJS(t, "the charts update", `Number(document.getElementById('chart-throughput').dataset.points) >= 3 && Number(document.getElementById('chart-latency').dataset.points) >= 3`, 10*time.Second)
	first := b.eval(t, `document.getElementById('chart-throughput').dataset.last`)
	b.waitJS(t, "the chart moves on", fmt.Sprintf(`document.getElementById('chart-throughput').dataset.last !== %q`, first), 5*time.Second)
	// Completed jobs reach history: the throughput line leaves zero.
	b.waitJS(t, "the throughput chart shows completed jobs",
		`Array.from(document.querySelectorAll('#chart-throughput polyline[data-series="completed/s"]')).some(p => p.getAttribute('points').split(' ').some(xy => Number(xy.split(',')[1]) < 170))`, 15*time.Second)
	b.waitJS(t, "the jobs in flight", `document.querySelector('#queues tr[data-queue="video"] td[data-col="running"]').textContent === '2'`, 10*time.Second)
	if os.Getenv("MILLRACE_SCREENSHOTS") != "" {
		b.waitJS(t, "20 s of chart for the screenshot", `Number(document.getElementById('chart-throughput').dataset.points) >= 20`, 40*time.Second)
	}
	b.screenshot(t, "queues")

	b.do(t, "jobs page", chromedp.Navigate(srv.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-id]`)))
	b.screenshot(t, "jobs")
	// Search by kind.
	b.do(t, "search", chromedp.SetValue(chromedp.CSS(`#search input[name="kind"]`), "email.send"),
		chromedp.Submit(chromedp.CSS(`#search`)), chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-id]`)))
	if n := b.eval(t, `String(document.querySelectorAll('#jobs tbody tr[data-id]').length) + ' ' + location.search`); n != "3 ?id=&queue=&kind=email.send&state=" {
		t.Errorf("search by kind: %s", n)
	}
	b.do(t, "jobs by state", chromedp.Navigate(srv.URL+"/jobs?state=discarded"), chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-state="discarded"]`)))

	b.do(t, "job page", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, discarded)),
		chromedp.WaitVisible(chromedp.CSS(`#attempts tr[data-state="discarded"]`)))
	if got := b.eval(t, `document.getElementById('attempts').textContent`); !strings.Contains(got, "unsupported format") {
		t.Errorf("the attempt's error is not shown: %s", got)
	}
	b.screenshot(t, "job")

	b.do(t, "horizon page", chromedp.Navigate(srv.URL+"/horizon"), chromedp.WaitVisible(chromedp.CSS(`#tables tbody tr`)))
	if got := b.eval(t, `document.getElementById('guard-source').textContent`); !strings.Contains(got, "examples/analytics-budget.yaml") {
		t.Errorf("the guard section does not name the policy: %s", got)
	}
}

// Pause and resume, clicked in the page, change the database, and the
// page shows it.
func TestBrowserPauseResume(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first
	ctx := context.Background()
	b.do(t, "queues page", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="pause"][data-queue="email"]`)),
		chromedp.Click(chromedp.CSS(`button[data-action="pause"][data-queue="email"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#msg`)))
	if p, err := ops.Paused(ctx, pool, "email"); err != nil || !p {
		t.Fatalf("clicking pause did not pause the queue: %v %v", p, err)
	}
	b.waitJS(t, "the page shows the queue paused", `(document.querySelector('#queues tr[data-queue="email"] [data-col="paused"]') || {}).textContent === 'paused'`, 5*time.Second)
	b.do(t, "resume", chromedp.WaitVisible(chromedp.CSS(`button[data-action="resume"][data-queue="email"]`)),
		chromedp.Click(chromedp.CSS(`button[data-action="resume"][data-queue="email"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="pause"][data-queue="email"]`)))
	if p, err := ops.Paused(ctx, pool, "email"); err != nil || p {
		t.Fatalf("clicking resume did not resume the queue: %v %v", p, err)
	}
}

// A limit set and cleared in the page changes the database, and the page
// shows it as held / limit (and a per-key limit by its keys).
func TestBrowserLimit(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first
	ctx := context.Background()
	input := `#queues tr[data-queue="email"] form.limit input[name="running"]`
	rate := `#queues tr[data-queue="email"] form.limit input[name="rate"]`
	perKey := `#queues tr[data-queue="email"] form.limit input[name="per_key"]`
	keyRate := `#queues tr[data-queue="email"] form.limit input[name="key_rate"]`
	key := `#queues tr[data-queue="email"] form.limit input[name="key"]`
	button := `button[data-action="limit"][data-queue="email"]`
	b.do(t, "queues page", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(input)),
		chromedp.SetValue(chromedp.CSS(input), "40"),
		chromedp.SetValue(chromedp.CSS(rate), "10/1s"),
		chromedp.SetValue(chromedp.CSS(perKey), "2"),
		chromedp.SetValue(chromedp.CSS(keyRate), "5/1m"),
		chromedp.SetValue(chromedp.CSS(key), "customer_id"),
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitVisible(chromedp.CSS(`#msg`)))
	if ls, err := ops.Limits(ctx, pool); err != nil || len(ls) != 1 || ls[0].Running != 40 || ls[0].Rate != 10 || ls[0].Per != time.Second ||
		ls[0].PerKey != 2 || strings.Join(ls[0].Key, ",") != "args.customer_id" || ls[0].KeyRate != 5 || ls[0].KeyPer != time.Minute {
		t.Fatalf("setting limits of 40 running, 10/1s, 2 per customer_id and 5/1m per customer_id in the page: limits %+v, %v", ls, err)
	}
	b.waitJS(t, "the page shows the limits", `(document.querySelector('#queues tr[data-queue="email"] [data-col="limit"]') || {}).textContent === '0 / 40, 0 / 10/1s, 2 per customer_id: 0 keys, 0 full, 0 deferred, 5/1m per customer_id'`, 5*time.Second)
	b.screenshot(t, "limit")
	b.do(t, "clear", chromedp.WaitVisible(chromedp.CSS(input)),
		chromedp.Clear(chromedp.CSS(rate)),
		chromedp.Clear(chromedp.CSS(input)),
		chromedp.Clear(chromedp.CSS(perKey)),
		chromedp.Clear(chromedp.CSS(keyRate)),
		chromedp.Clear(chromedp.CSS(key)),
		chromedp.Click(chromedp.CSS(button)))
	testkit.WaitFor(t, "the limit cleared from the page", 10*time.Second, func() bool {
		ls, err := ops.Limits(ctx, pool)
		return err == nil && len(ls) == 0
	})
	b.waitJSAcrossLoads(t, "the page shows no limit", `(document.querySelector('#queues tr[data-queue="email"] [data-col="limit"]') || {}).textContent === '–'`, 5*time.Second)
}

// Cancel and retry, clicked on the job's page, change the database.
func TestBrowserCancelRetry(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	ctx := context.Background()
	id := testkit.Enqueue(t, pool, "email.send", "email", `{"to":"ada@example.com"}`, 0)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first
	b.do(t, "cancel", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, id)),
		chromedp.WaitVisible(chromedp.CSS(`#cancel`)), chromedp.Click(chromedp.CSS(`#cancel`)),
		chromedp.WaitVisible(chromedp.CSS(`#retry`)))
	d, err := ops.GetJob(ctx, pool, id)
	if err != nil || d.Live != nil || d.Latest().State != "cancelled" {
		t.Fatalf("after clicking cancel: %+v %v", d, err)
	}
	if got := b.eval(t, `document.getElementById('job-state').textContent`); got != "cancelled" {
		t.Errorf("the page shows %q after cancel", got)
	}
	// Retry makes a new job and shows its page, with a cancel button.
	b.do(t, "retry", chromedp.Click(chromedp.CSS(`#retry`)), chromedp.WaitVisible(chromedp.CSS(`#cancel`)))
	var n int64
	fmt.Sscanf(b.eval(t, `location.pathname.split('/').pop()`), "%d", &n)
	d, err = ops.GetJob(ctx, pool, n)
	if err != nil || n == id || d.Live == nil {
		t.Fatalf("after clicking retry the new job %d is not live: %+v %v", n, d, err)
	}
	// The retried job's page links to its successor and offers no retry
	// (a second one would only answer with the same job); the link leads
	// to the new job.
	b.do(t, "the retried job", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, id)), chromedp.WaitVisible(chromedp.CSS(`#retried-as a`)))
	if got := b.eval(t, `String(document.querySelectorAll('#retry').length)`); got != "0" {
		t.Errorf("the page of job %d, already retried as job %d, still offers Retry now", id, n)
	}
	if got, want := b.eval(t, `document.querySelector('#retried-as a').textContent`), fmt.Sprintf("job %d", n); got != want {
		t.Errorf("the retried job links to %q; want %q", got, want)
	}
	b.do(t, "follow the link", chromedp.Click(chromedp.CSS(`#retried-as a`)), chromedp.WaitVisible(chromedp.CSS(`#cancel`)))
	if got := b.eval(t, `location.pathname.split('/').pop()`); got != fmt.Sprint(n) {
		t.Errorf("the link led to job %s; want job %d", got, n)
	}
	// A job never retried has no link, and offers Retry now.
	other := testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	if r, err := ops.Cancel(ctx, pool, other); err != nil || r != "cancelled" {
		t.Fatalf("cancel job %d: %s %v", other, r, err)
	}
	b.do(t, "a cancelled job never retried", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, other)), chromedp.WaitVisible(chromedp.CSS(`#retry`)))
	if got := b.eval(t, `String(document.querySelectorAll('#retried-as').length)`); got != "0" {
		t.Errorf("job %d, never retried, shows a successor", other)
	}
}

// isoStamp is a time as the dashboard shows every time (ui's stamp).
var isoStamp = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$`)

// A transaction left open in a second session appears on the horizon page
// within 2 s, with its pid, and goes when it ends.
func TestBrowserHorizonShowsHeldTransaction(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	policy, err := guard.ParsePolicy("guard.yaml", []byte("classes:\n  - name: reports\n    match: {application_name: \"report*\"}\n    max_idle_in_transaction: 1s\n    action: cancel\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui.New(pool, ui.Options{Policy: policy, PolicyName: "guard.yaml"}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first
	b.do(t, "queues page, no queue yet", chromedp.Navigate(srv.URL+"/"))
	b.waitJS(t, "the empty state", `document.querySelector('#queues tbody').textContent.includes('No queue has a job yet.')`, 5*time.Second)
	b.do(t, "horizon page", chromedp.Navigate(srv.URL+"/horizon"), chromedp.WaitVisible(chromedp.CSS(`#holders tbody tr`)))
	// Jobs in flight: a steady flow, two long jobs running, a backlog.
	clientkit.Work(t, pool, "work", 40)
	runHeld(t, pool, "video", 2, nil)
	for i := range 30 {
		testkit.Enqueue(t, pool, "report.monthly", "reports", fmt.Sprintf(`{"month":"2026-%02d"}`, i%12+1), time.Hour)
	}

	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "report-writer"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid() FROM (SELECT txid_current()) x").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	row := fmt.Sprintf(`#holders tr[data-source="session"][data-pid="%d"]`, pid)
	b.waitJS(t, "the held transaction appears within 2 s", fmt.Sprintf(`document.querySelector(%q) !== null`, row), 2*time.Second)
	if d := time.Since(held); d > 2*time.Second {
		t.Fatalf("the held transaction appeared after %v", d)
	}
	if got := b.eval(t, fmt.Sprintf(`document.querySelector(%q).textContent`, row)); !strings.Contains(got, "reports") {
		t.Errorf("the holder's class is not shown: %s", got)
	}
	// Idle in its transaction for over 1 s, it breaks the class's rule: the
	// dry run says what the guard would do.
	b.waitJS(t, "the guard's dry run lists the holder", `Array.from(document.querySelectorAll('#actions tbody tr')).some(r => r.textContent.includes('would terminate'))`, 5*time.Second)
	// The time the guard saw it is shown as every time of the dashboard:
	// ISO 8601, to the millisecond (was the browser's locale time, 3:04:05 PM).
	if got := b.eval(t, `Array.from(document.querySelectorAll('#actions tbody tr')).find(r => r.textContent.includes('would terminate')).children[0].textContent`); !isoStamp.MatchString(got) {
		t.Errorf("the guard's action was seen at %q; want a time like 2006-01-02 15:04:05.000", got)
	}
	if os.Getenv("MILLRACE_SCREENSHOTS") != "" {
		b.waitJS(t, "the jobs' tables for the screenshot", `(() => {
  const td = document.querySelector('#tables td[data-table="millrace.job"]');
  return td !== null && Number(td.parentElement.children[2].textContent.replace(/,/g, '')) > 0;
})()`, 20*time.Second)
	}
	b.screenshot(t, "horizon")
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	b.waitJS(t, "the holder goes when its transaction ends", fmt.Sprintf(`document.querySelector(%q) === null`, row), 5*time.Second)
}

// On a database without the schema the queues page says in one line what
// to run (not "loading…" forever, not a read-only role), and shows the
// queues once the schema is there.
func TestBrowserNoSchemaSaysMigrate(t *testing.T) {
	needChromium(t)
	pool := poolFor(t, testkit.EmptyDBURL(t))
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	t.Cleanup(srv.Close)
	b := newBrowser(t)       // after the server: its cleanup runs first
	b.allow("status of 503") // the endpoint's answer until the schema is there
	b.do(t, "queues page", chromedp.Navigate(srv.URL+"/"))
	b.waitJS(t, "the table leaves loading…", `!document.querySelector('#queues tbody').textContent.includes('loading')`, 5*time.Second)
	// Two polls: the line stays single.
	b.waitJS(t, "a second poll", `document.querySelector('#queues tbody').textContent === 'No queue to show.'`, 5*time.Second)
	if n := b.eval(t, `String(document.body.innerText.split('millrace migrate up').length - 1)`); n != "1" {
		t.Errorf("the page names millrace migrate up %s times, want once:\n%s", n, b.eval(t, `document.body.innerText`))
	}
	if got := b.eval(t, `document.querySelector('header .role').textContent`); got == "read-only role" {
		t.Errorf("the header says %q", got)
	}
	if err := millrace.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	b.waitJSAcrossLoads(t, "the page shows the queues once the schema is there",
		`document.getElementById('setup') === null && document.querySelector('#queues tbody').textContent.includes('No queue has a job yet.')`, 10*time.Second)
	if got := b.eval(t, `document.querySelector('header .role').textContent`); got != "actions allowed" {
		t.Errorf("after the migration the header says %q", got)
	}
}

// fakeOverview makes the pages of this tab receive overview (JSON) from
// api/overview instead of the server's answer, from the next navigation:
// the page's own script then draws data the test chose.
func (b *browserTab) fakeOverview(t *testing.T, overview string) {
	t.Helper()
	js := `(() => {
  const body = ` + strconv.Quote(overview) + `;
  const real = window.fetch;
  window.fetch = (url, opts) => String(url).startsWith("api/overview")
    ? Promise.resolve(new Response(body, { status: 200, headers: { "Content-Type": "application/json" } }))
    : real(url, opts);
})();`
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
		t.Fatal(err)
	}
}

// countColor counts the pixels of img within dist (per channel) of c.
func countColor(img image.Image, c color.RGBA, dist int) int {
	n := 0
	abs := func(a int) int { return max(a, -a) }
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if abs(int(r>>8)-int(c.R)) <= dist && abs(int(g>>8)-int(c.G)) <= dist && abs(int(bl>>8)-int(c.B)) <= dist {
				n++
			}
		}
	}
	return n
}

// The queues page's charts break their lines where no sample was taken
// (the charts were not watched for 30 s) instead of drawing a straight
// line across, and a failed line equal to the discarded one stays
// visible.
func TestBrowserChartsGapsAndOverlaps(t *testing.T) {
	needChromium(t)
	pool := testkit.DB(t)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	t.Cleanup(srv.Close)
	b := newBrowser(t) // after the server: its cleanup runs first

	// 10 one-second samples, nothing for 30 s, 10 more; as many failed as
	// discarded attempts every second; the wait p50 at 82 ms before the
	// gap, 22 ms after.
	type sample struct {
		At        time.Time `json:"at"`
		Since     time.Time `json:"since"`
		Completed int       `json:"completed"`
		Failed    int       `json:"failed"`
		Discarded int       `json:"discarded"`
		Cancelled int       `json:"cancelled"`
		Snoozed   int       `json:"snoozed"`
		WaitP50   float64   `json:"wait_p50_ms"`
		WaitP95   float64   `json:"wait_p95_ms"`
		RunP50    float64   `json:"run_p50_ms"`
		RunP95    float64   `json:"run_p95_ms"`
	}
	var samples []sample
	at := time.Now().Add(-time.Minute)
	for i := range 20 {
		since := at
		at = at.Add(time.Second)
		if i == 10 {
			at = at.Add(30 * time.Second)
		}
		wait := 82.0
		if i >= 10 {
			wait = 22
		}
		samples = append(samples, sample{At: at, Since: since, Completed: 20, Failed: 6, Discarded: 6, WaitP50: wait, WaitP95: wait + 40, RunP50: 5, RunP95: 9})
	}
	ov, err := json.Marshal(map[string]any{"queues": []any{}, "samples": samples, "can": map[string]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	b.fakeOverview(t, string(ov))
	b.do(t, "queues page", chromedp.Navigate(srv.URL+"/"))
	b.waitJS(t, "the charts drawn", `Number(document.getElementById('chart-latency').dataset.points) === 20`, 10*time.Second)

	// No segment of a line crosses the 30 s without samples; every sample
	// is drawn.
	got := b.eval(t, `JSON.stringify(Array.from(document.querySelectorAll('#chart-latency polyline[data-series="wait p50"]')).map(p => p.getAttribute('points').trim().split(/\s+/).map(xy => Number(xy.split(',')[0]))))`)
	var lines [][]float64
	if err := json.Unmarshal([]byte(got), &lines); err != nil {
		t.Fatal(err)
	}
	points, widest := 0, 0.0
	for _, xs := range lines {
		for i := range xs {
			if i > 0 && xs[i] != xs[i-1] {
				points++
			}
			if i > 0 {
				widest = max(widest, xs[i]-xs[i-1])
			}
		}
		if len(xs) > 0 {
			points++
		}
	}
	// 49 s over about 550 units: a second is about 11, the gap about 350.
	if widest > 40 || points != 20 {
		t.Errorf("wait p50 is drawn as %d line(s) over %d distinct points, the widest step %.0f units (a line across the gap): %s", len(lines), points, widest, got)
	}

	// Failed and discarded, equal, are both seen.
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`#chart-throughput`)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	red, purple := countColor(img, color.RGBA{0xd9, 0x2d, 0x20, 0xff}, 40), countColor(img, color.RGBA{0x7a, 0x5a, 0xf8, 0xff}, 40)
	if red < 50 || purple < 50 {
		t.Errorf("failed (red) and discarded (purple) draw %d and %d pixels: one hides the other", red, purple)
	}
	if dir := os.Getenv("MILLRACE_CHART_PNG"); dir != "" {
		os.WriteFile(filepath.Join(dir, "throughput.png"), shot, 0o644) // to look at
	}
}
