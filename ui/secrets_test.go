package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
	"github.com/millrace/millrace/ui"
)

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holdWith opens a session that holds the horizon with stmt as its last
// statement and returns its pid; the transaction ends with the test.
func holdWith(t *testing.T, u, stmt string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var pid int
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid(), txid_current()").Scan(&pid, new(int64)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	return pid
}

// No page, endpoint or log line of the dashboard shows a password: not the
// one of its own connection string, nor one in a session's query, a job's
// arguments or a job's error.
func TestNoPasswordShown(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	withPassword := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		p.User = url.UserPassword(p.User.Username(), "s3cret-dsn") // the test server trusts, and ignores it
		return p.String()
	}
	dash := poolFor(t, withPassword(u))
	var logs syncBuffer
	srv := httptest.NewServer(ui.New(dash, ui.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	defer srv.Close()

	job := testkit.Enqueue(t, pool, "sync", "mirror", `{"source":"postgres://app:s3cret-args@db.example/app","password":"s3cret-json"}`, 0)
	discarded := clientkit.Discard(t, pool, "mirror", "connect postgres://app:s3cret-err@db.example/app: connection refused")
	urlPID := holdWith(t, u, `SELECT 'postgres://app:s3cret-url@db.example/app' AS dsn, 'host=db password=s3cret-kv user=app' AS kv`)
	sqlPID := holdWith(t, u, `CREATE ROLE rotated_app LOGIN PASSWORD 's3cret-sql'`)

	// Wait until the horizon shows both sessions.
	waitFor(t, "both holders on the horizon", func() bool {
		_, body := get(t, srv.URL+"/api/horizon")
		return strings.Contains(body, fmt.Sprintf(`"pid":%d,`, urlPID)) && strings.Contains(body, fmt.Sprintf(`"pid":%d,`, sqlPID))
	})
	if _, body := get(t, srv.URL+"/api/horizon"); !strings.Contains(body, "postgres://app:***@db.example/app") || !strings.Contains(body, "PASSWORD '***'") {
		t.Errorf("the holders' queries are not shown redacted: %s", body)
	}
	pages := []string{"/", "/jobs", "/jobs?state=discarded", fmt.Sprintf("/jobs/%d", job), fmt.Sprintf("/jobs/%d", discarded),
		"/horizon", "/api/horizon", "/api/overview", "/api/jobs", fmt.Sprintf("/api/jobs/%d", job), fmt.Sprintf("/api/jobs/%d", discarded)}
	for _, p := range pages {
		code, body := get(t, srv.URL+p)
		if code != 200 {
			t.Errorf("GET %s: %d %.300s", p, code, body)
		}
		if strings.Contains(body, "s3cret") {
			i := strings.Index(body, "s3cret")
			t.Errorf("GET %s shows a password: …%s…", p, body[max(0, i-120):min(len(body), i+40)])
		}
	}
	_, body := get(t, srv.URL+fmt.Sprintf("/jobs/%d", discarded))
	if !strings.Contains(body, "postgres://app:***@db.example/app") {
		t.Errorf("the job's error is not shown redacted: %s", body)
	}

	// The same dashboard on a database it cannot reach, and on one without
	// the schema: errors, and log lines.
	for name, target := range map[string]string{
		"unreachable": testkit.WithDatabase(withPassword(u), "no_such_database"),
		"no schema":   withPassword(testkit.EmptyDBURL(t)),
	} {
		s := httptest.NewServer(ui.New(poolFor(t, target), ui.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
		for _, p := range pages {
			if _, body := get(t, s.URL+p); strings.Contains(body, "s3cret") {
				t.Errorf("%s: GET %s shows a password: %.400s", name, p, body)
			}
		}
		s.Close()
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the log shows a password:\n%s", logs.String())
	}
}
