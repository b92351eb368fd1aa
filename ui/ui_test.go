package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/ui"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// client is an HTTP client that does not follow redirects.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, u string, form url.Values, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func poolFor(t *testing.T, u string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// The dashboard mounted under a prefix in another server: every page and
// endpoint answers there, links are relative, and the JSON says what the
// queues hold.
func TestPagesUnderPrefix(t *testing.T) {
	pool := testkit.DB(t)
	id := testkit.Enqueue(t, pool, "email", "mail", `{"to":"ada@example.com"}`, 0)
	testkit.Enqueue(t, pool, "email", "mail", `{}`, time.Hour)
	mux := http.NewServeMux()
	mux.Handle("/ops/queue/", http.StripPrefix("/ops/queue", ui.New(pool, ui.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	root := srv.URL + "/ops/queue/"
	for _, p := range []string{"", "jobs", "jobs?state=available&queue=mail", fmt.Sprintf("jobs/%d", id), "horizon", "assets/app.js", "assets/style.css"} {
		code, body := get(t, root+p)
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	_, body := get(t, root+fmt.Sprintf("jobs/%d", id))
	if !strings.Contains(body, `<base href="../">`) || !strings.Contains(body, "ada@example.com") {
		t.Errorf("job page: no relative base or no args:\n%s", body)
	}
	code, body := get(t, root+"api/overview")
	if code != 200 {
		t.Fatalf("api/overview: %d %s", code, body)
	}
	var ov struct {
		Queues []struct {
			Name                 string
			Available, Scheduled int64
			Paused               bool
		}
		Samples []ops.Sample
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	if len(ov.Queues) != 1 || ov.Queues[0].Name != "mail" || ov.Queues[0].Available != 1 || ov.Queues[0].Scheduled != 1 || len(ov.Samples) != 1 {
		t.Errorf("api/overview: %s", body)
	}
	if code, _ := get(t, root+"jobs/999999"); code != 404 {
		t.Errorf("an unknown job: %d, want 404", code)
	}
	if code, _ := get(t, root+"jobs?state=nonsense"); code != 400 {
		t.Errorf("an unknown state: %d, want 400", code)
	}
	code, body = get(t, root+"api/jobs?queue=mail")
	var jobs []ops.Job
	if code != 200 || json.Unmarshal([]byte(body), &jobs) != nil || len(jobs) != 2 {
		t.Errorf("api/jobs?queue=mail: %d %s", code, body)
	}
}

// Pause and resume through the dashboard change the database; a
// cross-origin POST is refused.
func TestPauseResumeAndSameOrigin(t *testing.T) {
	pool := testkit.DB(t)
	testkit.Enqueue(t, pool, "email", "mail", `{}`, 0)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer srv.Close()
	ctx := context.Background()
	resp := post(t, srv.URL+"/queue/pause", url.Values{"queue": {"mail"}}, "Origin", "https://evil.example")
	if resp.StatusCode != 403 {
		t.Fatalf("a cross-origin pause: %d, want 403", resp.StatusCode)
	}
	resp = post(t, srv.URL+"/queue/pause", url.Values{"queue": {"mail"}}, "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != 403 {
		t.Fatalf("a cross-site pause: %d, want 403", resp.StatusCode)
	}
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || p {
		t.Fatalf("paused after refused requests: %v %v", p, err)
	}
	resp = post(t, srv.URL+"/queue/pause", url.Values{"queue": {"mail"}}, "Origin", srv.URL)
	if resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "../?msg=") {
		t.Fatalf("pause: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || !p {
		t.Fatalf("not paused after pause: %v %v", p, err)
	}
	_, body := get(t, srv.URL+"/api/overview")
	if !strings.Contains(body, `"paused":true`) {
		t.Errorf("overview after pause: %s", body)
	}
	post(t, srv.URL+"/queue/resume", url.Values{"queue": {"mail"}}, "Origin", srv.URL)
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || p {
		t.Fatalf("paused after resume: %v %v", p, err)
	}
}

// A worker role may read but not act: no action is offered and a POST is
// refused; the admin role is offered pause and resume.
func TestActionsFollowTheRole(t *testing.T) {
	pool := testkit.DB(t)
	id := testkit.Enqueue(t, pool, "email", "mail", `{}`, 0)
	worker := poolFor(t, testkit.LoginAs(t, pool, "millrace_worker"))
	admin := poolFor(t, testkit.LoginAs(t, pool, "millrace_admin"))
	ws := httptest.NewServer(ui.New(worker, ui.Options{}))
	defer ws.Close()
	as := httptest.NewServer(ui.New(admin, ui.Options{}))
	defer as.Close()
	ro := httptest.NewServer(ui.New(admin, ui.Options{ReadOnly: true}))
	defer ro.Close()

	_, body := get(t, ws.URL+"/api/overview")
	if !strings.Contains(body, `"can":{"cancel":false,"retry":false,"pause":false,"resume":false,"limit":false}`) {
		t.Errorf("worker role: %s", body)
	}
	if resp := post(t, ws.URL+"/queue/pause", url.Values{"queue": {"mail"}}); resp.StatusCode != 403 {
		t.Errorf("worker pause: %d, want 403", resp.StatusCode)
	}
	// The worker role may call set_limit (a process's MaxRunning), but
	// the dashboard leaves limits to operators.
	if resp := post(t, ws.URL+"/queue/limit", url.Values{"queue": {"mail"}, "running": {"3"}}); resp.StatusCode != 403 {
		t.Errorf("worker limit: %d, want 403", resp.StatusCode)
	}
	if resp := post(t, as.URL+"/queue/limit", url.Values{"queue": {"mail"}, "running": {"0"}}); resp.StatusCode != 400 {
		t.Errorf("admin limit of 0: %d, want 400", resp.StatusCode)
	}
	if ls, _ := ops.Limits(context.Background(), pool); len(ls) != 0 {
		t.Errorf("refused limits set %+v", ls)
	}
	_, body = get(t, ws.URL+fmt.Sprintf("/jobs/%d", id))
	if strings.Contains(body, `id="cancel"`) {
		t.Error("the worker role is offered cancel")
	}
	_, body = get(t, as.URL+"/api/overview")
	if !strings.Contains(body, `"pause":true,"resume":true,"limit":true`) {
		t.Errorf("admin role: %s", body)
	}
	_, body = get(t, as.URL+fmt.Sprintf("/jobs/%d", id))
	if !strings.Contains(body, `id="cancel"`) {
		t.Error("the admin role is not offered cancel of a waiting job")
	}
	_, body = get(t, ro.URL+"/api/overview")
	if !strings.Contains(body, `"can":{"cancel":false,"retry":false,"pause":false,"resume":false,"limit":false}`) {
		t.Errorf("read-only: %s", body)
	}
	if resp := post(t, ro.URL+"/queue/pause", url.Values{"queue": {"mail"}}); resp.StatusCode != 403 {
		t.Errorf("read-only pause: %d, want 403", resp.StatusCode)
	}
	if p, _ := ops.Paused(context.Background(), pool, "mail"); p {
		t.Error("a refused pause paused the queue")
	}
}

func TestTokenAndBasicAuth(t *testing.T) {
	pool := testkit.DB(t)
	srv := httptest.NewServer(ui.New(pool, ui.Options{Token: "s3cret"}))
	defer srv.Close()
	if code, _ := get(t, srv.URL+"/"); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, _ := get(t, srv.URL+"/api/overview", "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	if code, _ := get(t, srv.URL+"/api/overview", "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("bearer token: %d", code)
	}
	resp, err := client.Get(srv.URL + "/jobs?token=s3cret&state=available")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "jobs?state=available" || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("?token=: %d %q cookie %v", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	if code, _ := get(t, srv.URL+"/jobs", "Cookie", cookie.Name+"="+cookie.Value); code != 200 {
		t.Errorf("with the cookie: %d", code)
	}
	if resp := post(t, srv.URL+"/queue/pause", url.Values{"queue": {"q"}}); resp.StatusCode != 401 {
		t.Errorf("a POST without the token: %d", resp.StatusCode)
	}

	basic := httptest.NewServer(ui.New(pool, ui.Options{BasicAuthUser: "ops", BasicAuthPassword: "pw"}))
	defer basic.Close()
	if code, _ := get(t, basic.URL+"/"); code != 401 {
		t.Errorf("basic, no credentials: %d", code)
	}
	u, _ := url.Parse(basic.URL)
	u.User = url.UserPassword("ops", "pw")
	if code, _ := get(t, u.String()+"/horizon"); code != 200 {
		t.Errorf("basic with credentials: %d", code)
	}
}

// The horizon endpoint lists a session holding an xid, with its class
// under a policy, and what the guard would do to it.
func TestHorizonShowsHolder(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	cfg, _ := pgx.ParseConfig(u)
	cfg.RuntimeParams["application_name"] = "report-writer"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var pid int
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid() FROM (SELECT txid_current()) x").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	policy, err := guard.ParsePolicy("p.yaml", []byte(`
classes:
  - name: reports
    match: {application_name: "report*"}
    max_transaction_age: 1ms
    action: terminate
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui.New(pool, ui.Options{Policy: policy, PolicyName: "p.yaml"}))
	defer srv.Close()
	code, body := get(t, srv.URL+"/api/horizon")
	if code != 200 {
		t.Fatalf("api/horizon: %d %s", code, body)
	}
	var v struct {
		Holders []struct {
			Source string
			PID    int
			Class  string
		}
		Actions []struct{ Action, Rule, Class string }
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range v.Holders {
		if h.Source == "session" && h.PID == pid && h.Class == "reports" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the held transaction (pid %d) is not among the holders with class reports: %s", pid, body)
	}
	if len(v.Actions) != 1 || v.Actions[0].Action != "would terminate" || v.Actions[0].Rule != "max_transaction_age" {
		t.Errorf("dry-run actions: %+v", v.Actions)
	}
	// The dry run signals nothing: the holder's transaction goes on.
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(new(int)); err != nil {
		t.Errorf("the holder was disturbed: %v", err)
	}
}

// Cancel and retry through the dashboard (schema version 5).
func TestCancelRetry(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer srv.Close()
	id := testkit.Enqueue(t, pool, "email", "mail", `{}`, 0)
	resp := post(t, srv.URL+fmt.Sprintf("/jobs/%d/cancel", id), nil, "Origin", srv.URL)
	if resp.StatusCode != 303 || !strings.Contains(resp.Header.Get("Location"), "cancelled") {
		t.Fatalf("cancel: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	d, err := ops.GetJob(ctx, pool, id)
	if err != nil || d.Live != nil || len(d.Attempts) == 0 || d.Latest().State != "cancelled" {
		t.Fatalf("after cancel: %+v %v", d, err)
	}
	resp = post(t, srv.URL+fmt.Sprintf("/jobs/%d/retry", id), nil, "Origin", srv.URL)
	if resp.StatusCode != 303 || !strings.Contains(resp.Header.Get("Location"), "retried") {
		t.Fatalf("retry: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	n := ops.RetriedAs(mustUnescape(t, resp.Header.Get("Location")))
	d, err = ops.GetJob(ctx, pool, n)
	if err != nil || d.Live == nil {
		t.Fatalf("after retry the new job %d is not live: %+v %v", n, d, err)
	}
}

// mustUnescape returns the msg of a redirect location.
func mustUnescape(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Query().Get("msg"), "retry: ")
}
