// Package testkit is the one kit for the tree's own tests, in every module
// of the workspace (the root, guard, ui, millraceprom, cmd/millrace, the
// bench); applications' tests have package millracetest:
//
//   - Main, for TestMain: the package's shared server stopped, and the
//     databases made without a test dropped, when its tests end;
//   - the server: a throwaway cluster per test binary, shared (Shared,
//     ServerURL), or the one DATABASE_URL names; Start for a cluster of a
//     test's own, NewPgBouncer for a pooler in front of one. Its clusters
//     run with fsync off and keep their files in RAM when the machine has
//     it (Start), and Main points the test binary's temp dir there too;
//   - databases, one per test: DB and DBURL at the current schema, copied
//     (CREATE DATABASE ... TEMPLATE) from a template migrated once per
//     test process; ExampleDB the same for runnable examples; EmptyDBURL
//     without the schema;
//   - Enqueue: a job added through the SQL API;
//   - WaitFor and Until: wait for a condition, polled with a deadline (the
//     poll interval is the only sleep a test needs to wait);
//   - LoginAs: a login role, member of one of the schema's roles;
//   - RequireServerVersion: skip a test the server is too old for.
//
// Jobs worked by a real client (a discarded job, a steady load) come from
// package clientkit, apart because it imports package millrace, whose own
// packages' tests use this one. Package testsignal is no part of the kit:
// it is the point production code fires for a test to wait on, and ships
// in binaries.
package testkit

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
)

// Poll is how often WaitFor and Until test their condition.
const Poll = 10 * time.Millisecond

// MaxConns is the size of the pool DB returns: room for a client's
// workers, its acker and maintenance, and the test's own queries.
const MaxConns = 20

var (
	tplOnce sync.Once
	tplName string
	tplErr  error

	dbN   atomic.Int64
	roleN atomic.Int64

	// made are the databases made without a test (the template, the
	// examples'), dropped by Main.
	madeMu sync.Mutex
	made   []string
)

// Main runs a test package's tests, then drops the databases made without
// a test and stops the shared cluster. Call it from TestMain:
// func TestMain(m *testing.M) { testkit.Main(m) }.
func Main(m *testing.M) {
	quickRaceExit()
	tempInRAM()
	code := m.Run()
	dropMade()
	stopShared()
	os.Exit(code)
}

func dropMade() {
	madeMu.Lock()
	names := made
	made = nil
	madeMu.Unlock()
	if len(names) == 0 || os.Getenv("DATABASE_URL") == "" {
		return // a throwaway cluster goes with all its databases
	}
	base, err := ServerURL()
	if err != nil {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for _, n := range names {
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)")
	}
}

// template returns the name of this process's template database,
// migrating it on first use.
func template() (string, error) {
	tplOnce.Do(func() {
		ctx := context.Background()
		base, err := ServerURL()
		if err != nil {
			tplErr = err
			return
		}
		name := fmt.Sprintf("millrace_tpl_%d", os.Getpid())
		if tplErr = exec(ctx, base, "DROP DATABASE IF EXISTS "+name, "CREATE DATABASE "+name); tplErr != nil {
			return
		}
		remember(name)
		pool, err := pgxpool.New(ctx, WithDatabase(base, name))
		if err != nil {
			tplErr = err
			return
		}
		_, err = schema.Up(ctx, pool, 0)
		pool.Close() // a template must have no session when it is copied
		if err != nil {
			tplErr = fmt.Errorf("testkit: migrating the template: %w", err)
			return
		}
		tplName = name
	})
	return tplName, tplErr
}

func remember(name string) {
	madeMu.Lock()
	made = append(made, name)
	madeMu.Unlock()
}

func exec(ctx context.Context, u string, sqls ...string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range sqls {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("testkit: %s: %w", s, err)
		}
	}
	return nil
}

// clone copies the template into a new database named after prefix and
// returns the database's name and URL.
func clone(prefix string) (name, u string, err error) {
	tpl, err := template()
	if err != nil {
		return "", "", err
	}
	base, err := ServerURL()
	if err != nil {
		return "", "", err
	}
	name = fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), dbN.Add(1))
	if err := exec(context.Background(), base, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+tpl); err != nil {
		return "", "", err
	}
	return name, WithDatabase(base, name), nil
}

// DBURL creates a database at the current schema for one test, copied
// from the process's template, and returns its URL. The database is
// dropped when the test ends.
func DBURL(t testing.TB) string {
	t.Helper()
	name, u, err := clone("m_" + sanitize(t.Name()))
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() {
		base, err := ServerURL()
		if err == nil {
			exec(context.Background(), base, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		}
	})
	return u
}

// DB returns a pool of MaxConns connections on a database made by DBURL.
// The pool is closed, and the database dropped, when the test ends.
func DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = MaxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// ExampleDB is DB for runnable examples, which have no test to fail or
// clean up after: it panics on error, and Main drops the database.
func ExampleDB() *pgxpool.Pool {
	name, u, err := clone("example")
	if err != nil {
		panic(err)
	}
	remember(name)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		panic(err)
	}
	return pool
}

// Enqueue adds a job through the SQL API and returns its id. A non-zero
// delay schedules it for later.
func Enqueue(t testing.TB, db *pgxpool.Pool, kind, queue string, args string, delay time.Duration) int64 {
	t.Helper()
	var id int64
	err := db.QueryRow(context.Background(),
		"SELECT millrace.enqueue(p_kind => $1, p_args => $2::jsonb, p_queue => $3, p_run_at => now() + $4::bigint * interval '1 microsecond')",
		kind, args, queue, delay.Microseconds()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Until polls cond every Poll until it holds, and reports whether it did
// before timeout passed. For code that has no test to fail (examples,
// helpers of other processes); tests use WaitFor.
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Poll)
	}
	return true
}

// WaitFor polls cond every Poll until it holds; if timeout passes first,
// it fails the test, saying what it waited for and what the optional
// explain funcs return. The timeout is a bound on a broken run, not a
// measure: make it generous.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool, explain ...func() string) {
	t.Helper()
	if Until(timeout, cond) {
		return
	}
	msg := ""
	for _, e := range explain {
		msg += "; " + e()
	}
	t.Fatalf("timed out after %v waiting for %s%s", timeout, what, msg)
}

// LoginAs creates a login role that is a member of role (one of the
// schema's roles, or any other) and returns db's URL with that user. The
// role is dropped, with what it owns, when the test ends.
func LoginAs(t testing.TB, db *pgxpool.Pool, role string) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s_%s_%d", role, db.Config().ConnConfig.Database, roleN.Add(1))
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	id := pgx.Identifier{name}.Sanitize()
	if _, err := db.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN IN ROLE %s", id, pgx.Identifier{role}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Exec(context.Background(), fmt.Sprintf("DROP OWNED BY %[1]s; DROP ROLE %[1]s", id))
	})
	u, err := url.Parse(db.Config().ConnString())
	if err != nil || u.Scheme == "" {
		t.Fatalf("testkit: LoginAs needs a URL-form connection string: %v", err)
	}
	u.User = url.User(name)
	return u.String()
}

// Querier is what RequireServerVersion asks: a pool, a connection or a
// transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// RequireServerVersion skips the test unless the server db is connected
// to is at least version min, in server_version_num form (150000 for 15).
// It returns the server's version.
func RequireServerVersion(t testing.TB, db Querier, min int) int {
	t.Helper()
	var v int
	if err := db.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v < min {
		t.Skipf("needs PostgreSQL server version %d or newer; this one is %d", min, v)
	}
	return v
}

func sanitize(s string) string {
	b := make([]byte, 0, 30)
	for i := 0; i < len(s) && len(b) < 30; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, '_')
		}
	}
	return string(b)
}
