package ui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/ui"
)

// send makes a request to srv with the given Host and headers (pairs) and
// returns its status and body.
func send(t *testing.T, method, u, host string, form url.Values, hdr ...string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
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

// DNS rebinding: a page of evil.example whose name now resolves to the
// dashboard's address is same-origin with itself, so Origin matches Host.
// The dashboard answers only the names it is served as: its address,
// localhost, and the names the operator lists.
func TestForeignHostRefused(t *testing.T) {
	pool := testkit.DB(t)
	testkit.Enqueue(t, pool, "email", "mail", `{}`, 0)
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	ctx := context.Background()

	evil := "evil.example:28080"
	code, body := send(t, "POST", srv.URL+"/queue/pause", evil, url.Values{"queue": {"mail"}}, "Origin", "http://"+evil)
	if code != http.StatusForbidden {
		t.Errorf("a rebound pause (Host and Origin %s): %d, want 403: %s", evil, code, body)
	}
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || p {
		t.Fatalf("a rebound pause paused the queue: %v %v", p, err)
	}
	for _, path := range []string{"/", "/api/overview", "/api/jobs", "/jobs", "/horizon", "/api/horizon", "/assets/app.js"} {
		code, body := send(t, "GET", srv.URL+path, evil, nil)
		if code != http.StatusForbidden || strings.Contains(body, "mail") {
			t.Errorf("GET %s as %s: %d, want 403 without data: %.200s", path, evil, code, body)
		}
	}
	// A proxy that rewrites Host to the dashboard's address passes on the
	// name the browser used.
	if code, body := send(t, "GET", srv.URL+"/api/overview", "", nil, "X-Forwarded-Host", evil); code != http.StatusForbidden {
		t.Errorf("GET with X-Forwarded-Host %s: %d, want 403: %.200s", evil, code, body)
	}
	if code, body := send(t, "GET", srv.URL+"/api/overview", "", nil, "Forwarded", `for=192.0.2.1;host="`+evil+`"`); code != http.StatusForbidden {
		t.Errorf("GET with Forwarded host %s: %d, want 403: %.200s", evil, code, body)
	}
	// The names a local dashboard is reached as.
	for _, h := range []string{"", "127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.:" + port, "[::1]:" + port, "app.localhost:" + port} {
		if code, body := send(t, "GET", srv.URL+"/api/overview", h, nil); code != 200 {
			t.Errorf("GET as %q: %d: %.200s", h, code, body)
		}
	}

	// Names the operator lists: exact, and a domain with its subdomains.
	named := httptest.NewServer(ui.New(pool, ui.Options{AllowedHosts: []string{"queue.internal", ".ops.example.com"}}))
	defer named.Close()
	for _, h := range []string{"queue.internal", "queue.internal:8080", "Queue.Internal", "a.ops.example.com:443", "ops.example.com"} {
		if code, body := send(t, "GET", named.URL+"/api/overview", h, nil); code != 200 {
			t.Errorf("GET as listed %q: %d: %.200s", h, code, body)
		}
	}
	for _, h := range []string{"queue.internal.evil.example", "evil.example", "xops.example.com", "localhost.evil.example"} {
		if code, _ := send(t, "GET", named.URL+"/api/overview", h, nil); code != http.StatusForbidden {
			t.Errorf("GET as unlisted %q: %d, want 403", h, code)
		}
	}
	// A state-changing request needs an Origin (when sent) of an allowed
	// host too, and the same as Host.
	if code, _ := send(t, "POST", named.URL+"/queue/pause", "queue.internal:8080", url.Values{"queue": {"mail"}}, "Origin", "http://evil.example:8080"); code != http.StatusForbidden {
		t.Errorf("a pause from another origin: %d, want 403", code)
	}
	if code, _ := send(t, "POST", named.URL+"/queue/pause", "127.0.0.1:8080", url.Values{"queue": {"mail"}}, "Origin", "http://evil.example:28080", "X-Forwarded-Host", "evil.example:28080"); code != http.StatusForbidden {
		t.Errorf("a pause from evil.example through a proxy: %d, want 403", code)
	}
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || p {
		t.Fatalf("a refused pause paused the queue: %v %v", p, err)
	}
	if code, body := send(t, "POST", named.URL+"/queue/pause", "queue.internal:8080", url.Values{"queue": {"mail"}}, "Origin", "http://queue.internal:8080"); code != http.StatusSeeOther {
		t.Errorf("a pause from the listed host: %d: %s", code, body)
	}
	if p, err := ops.Paused(ctx, pool, "mail"); err != nil || !p {
		t.Fatalf("the pause from the listed host did not pause: %v %v", p, err)
	}
}
