package testkit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Every database DB makes is at the current schema, its own, and gone
// when its test ends.
func TestDBIsMigratedAndOwn(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("a", func(t *testing.T) {
		a, b := testkit.DB(t), testkit.DB(t)
		if err := schema.Check(ctx, a); err != nil {
			t.Fatalf("a copy of the template is not at the current schema: %v", err)
		}
		if a.Config().ConnConfig.Database == b.Config().ConnConfig.Database {
			t.Fatal("two tests' databases share a name")
		}
		if a.Config().MaxConns != testkit.MaxConns {
			t.Errorf("MaxConns = %d, want %d", a.Config().MaxConns, testkit.MaxConns)
		}
		if _, err := a.Exec(ctx, "SELECT millrace.enqueue('k', '{}'::jsonb)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := b.QueryRow(ctx, "SELECT count(*) FROM millrace.job").Scan(&n); err != nil || n != 0 {
			t.Fatalf("b sees %d jobs (%v): the copies share rows", n, err)
		}
		first = a.Config().ConnConfig.Database
	})
	var left int
	if err := testkit.DB(t).QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", first).Scan(&left); err != nil || left != 0 {
		t.Fatalf("database %s of an ended test still exists (%d, %v)", first, left, err)
	}
}

// recorder is a testing.TB whose Fatalf and Skipf record instead of
// ending the goroutine.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.fatal = fmt.Sprintf(format, a...) }
func (r *recorder) Skipf(format string, a ...any)  { r.skip = fmt.Sprintf(format, a...) }

func TestWaitFor(t *testing.T) {
	n := 0
	testkit.WaitFor(t, "three polls", time.Minute, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3: WaitFor returns as soon as it holds", n)
	}
	r := &recorder{TB: t}
	testkit.WaitFor(r, "never", 20*time.Millisecond, func() bool { return false }, func() string { return "it was false" })
	if !strings.Contains(r.fatal, "waiting for never") || !strings.Contains(r.fatal, "it was false") {
		t.Fatalf("on time-out: %q, want what was waited for and the explanation", r.fatal)
	}
	if testkit.Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported a condition that never held")
	}
}

func TestLoginAs(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	u := testkit.LoginAs(t, pool, "millrace_producer")
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var user string
	var member bool
	if err := conn.QueryRow(ctx, "SELECT current_user, pg_has_role('millrace_producer', 'MEMBER')").Scan(&user, &member); err != nil {
		t.Fatal(err)
	}
	if user == "postgres" || !member {
		t.Fatalf("connected as %s, member of millrace_producer: %v", user, member)
	}
}

func TestRequireServerVersion(t *testing.T) {
	pool := testkit.DB(t)
	v := testkit.RequireServerVersion(t, pool, 0)
	if v < 100000 {
		t.Fatalf("server version %d", v)
	}
	r := &recorder{TB: t}
	testkit.RequireServerVersion(r, pool, v+1)
	if r.skip == "" {
		t.Fatal("a server older than required did not skip the test")
	}
}
