package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

var (
	sharedOnce    sync.Once
	sharedCluster *Cluster
	sharedErr     error
	dbCounter     atomic.Int64
)

// Main runs a test package's tests and stops the shared cluster afterwards.
// Call it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	QuickRaceExit()
	TempInRAM()
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// QuickRaceExit makes the processes a test starts (the test binary run
// again as a worker, a CLI, a crashing child) exit at once under the race
// detector: by default a race-enabled binary sleeps a second before it
// exits (GORACE atexit_sleep_ms=1000), and the suite starts several
// hundred of them. Races are still reported as they happen. A GORACE the
// caller set is kept.
func QuickRaceExit() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// TempInRAM points TMPDIR at a RAM-backed directory (pgcluster.RAMDir)
// for the test binary and the processes it starts, unless TMPDIR or
// MILLRACE_TEST_PGDIR is set: the clusters that code under test starts for
// itself in the temp dir (the bench's CLI, the dashboard's command) get
// what pgtest.Start's clusters get.
func TempInRAM() {
	if os.Getenv("TMPDIR") != "" || os.Getenv("MILLRACE_TEST_PGDIR") != "" {
		return
	}
	if dir := pgcluster.RAMDir(4 << 30); dir != "" {
		os.Setenv("TMPDIR", dir)
	}
}

// StopShared stops the package-wide cluster if one was started.
func StopShared() {
	if sharedCluster != nil {
		sharedCluster.Stop()
	}
}

// Shared returns the package-wide cluster, starting it on first use. It is
// nil when DATABASE_URL is set.
func Shared() (*Cluster, error) {
	if os.Getenv("DATABASE_URL") != "" {
		return nil, nil
	}
	sharedOnce.Do(func() {
		sharedCluster, sharedErr = Start(context.Background(), Options{})
	})
	return sharedCluster, sharedErr
}

// ServerURL returns a URL for the maintenance database of the server tests
// use: DATABASE_URL when set, otherwise the shared throwaway cluster.
func ServerURL() (string, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	c, err := Shared()
	if err != nil {
		return "", err
	}
	return c.URL("postgres"), nil
}

// NewDatabase creates a fresh, uniquely named database for one test and
// drops it when the test ends. It returns the database's URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base, err := ServerURL()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := fmt.Sprintf("t_%s_%d_%d", sanitize(t.Name()), os.Getpid(), dbCounter.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return WithDatabase(base, name)
}

// WithDatabase returns u with its database name replaced by db
// (pgcluster.WithDatabase).
func WithDatabase(u, db string) string { return pgcluster.WithDatabase(u, db) }

func sanitize(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 30 {
			break
		}
	}
	return b.String()
}
