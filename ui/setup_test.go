package ui_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/ui"
)

// On a database without the schema every page and endpoint says, in one
// line, what to run; the header does not claim a read-only role.
func TestNoSchemaSaysMigrate(t *testing.T) {
	pool := poolFor(t, testkit.EmptyDBURL(t))
	srv := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer srv.Close()
	for _, p := range []string{"/", "/jobs", "/jobs?state=available", "/jobs/1", "/horizon"} {
		_, body := get(t, srv.URL+p)
		if n := strings.Count(body, "millrace migrate up"); n != 1 {
			t.Errorf("GET %s names `millrace migrate up` %d times, want once:\n%s", p, n, body)
		}
		if strings.Contains(body, "read-only role") || strings.Contains(body, "SQLSTATE") {
			t.Errorf("GET %s: a wrong badge or a raw error:\n%s", p, body)
		}
	}
	for _, p := range []string{"/api/overview", "/api/jobs", "/api/jobs/1"} {
		code, body := get(t, srv.URL+p)
		var e struct{ Error string }
		if json.Unmarshal([]byte(body), &e) != nil || code != 503 || !strings.Contains(e.Error, "millrace migrate up") || strings.Contains(e.Error, "SQLSTATE") {
			t.Errorf("GET %s: %d %s, want 503 naming `millrace migrate up`", p, code, body)
		}
	}
}
