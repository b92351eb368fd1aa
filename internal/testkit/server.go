package testkit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

var (
	sharedOnce    sync.Once
	sharedCluster *Cluster
	sharedErr     error
)

// quickRaceExit makes the processes a test starts (the test binary run
// again as a worker, a CLI, a crashing child) exit at once under the race
// detector: by default a race-enabled binary sleeps a second before it
// exits (GORACE atexit_sleep_ms=1000), and the suite starts several
// hundred of them. Races are still reported as they happen. A GORACE the
// caller set is kept.
func quickRaceExit() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// tempInRAM points TMPDIR at a RAM-backed directory (pgcluster.RAMDir)
// for the test binary and the processes it starts, unless TMPDIR or
// MILLRACE_TEST_PGDIR is set: the clusters that code under test starts for
// itself in the temp dir (the bench's CLI, the dashboard's command) get
// what Start's clusters get.
func tempInRAM() {
	if os.Getenv("TMPDIR") != "" || os.Getenv("MILLRACE_TEST_PGDIR") != "" {
		return
	}
	if dir := pgcluster.RAMDir(4 << 30); dir != "" {
		os.Setenv("TMPDIR", dir)
	}
}

// stopShared stops the package-wide cluster if one was started.
func stopShared() {
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

// EmptyDBURL creates a fresh database without the schema (the test
// migrates it, or needs none) for one test and drops it when the test
// ends. It returns the database's URL.
func EmptyDBURL(t testing.TB) string {
	t.Helper()
	base, err := ServerURL()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	name := fmt.Sprintf("t_%s_%d_%d", sanitize(t.Name()), os.Getpid(), dbN.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("testkit: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("testkit: create database: %v", err)
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
