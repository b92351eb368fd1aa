package testkit

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/millrace/millrace/millracetest/pgcluster"
)

// Cluster is a running throwaway PostgreSQL server (pgcluster.Cluster).
type Cluster = pgcluster.Cluster

// Options configure a cluster (pgcluster.Options).
type Options = pgcluster.Options

// Start creates and starts a new cluster; the caller must Stop it. A test
// cluster runs with fsync off unless opts say otherwise: no test is about
// surviving a crash of the machine, and a crash of PostgreSQL (an
// immediate restart, a killed postmaster: the restart and chaos tests)
// loses nothing fsync would have kept, since the operating system still
// holds what was written. It cuts the suite's system time by about a
// third (internal/storage and internal/maint: 42 s of system time to 25,
// 50 s to 40 s of wall time). Its files go to a RAM-backed directory
// when the machine has one with 4 GB free (pgcluster.RAMDir: the kernel's
// work creating and unlinking a database's files on ext4 was a quarter of
// the suite's CPU time), or to MILLRACE_TEST_PGDIR when that is set.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Parent == "" {
		opts.Parent = os.Getenv("MILLRACE_TEST_PGDIR")
		if opts.Parent == "" {
			opts.Parent = pgcluster.RAMDir(4 << 30)
		}
	}
	if _, ok := opts.Settings["fsync"]; !ok {
		settings := map[string]string{"fsync": "off"}
		for k, v := range opts.Settings {
			settings[k] = v
		}
		opts.Settings = settings
	}
	return pgcluster.Start(ctx, opts)
}

// BinDir finds the PostgreSQL server binaries (pgcluster.BinDir).
func BinDir() (string, error) { return pgcluster.BinDir() }

// AddStandby starts a hot standby of c (Cluster.AddStandby); the caller
// must Stop it. A server build without a pg_basebackup able to copy it
// (a fetched build of a major version newer than the machine's own, under
// MILLRACE_PG) skips the test, except under CI=true with MILLRACE_PG unset,
// where the machine's own server must have one.
func AddStandby(t testing.TB, c *Cluster, opts Options) *pgcluster.Standby {
	t.Helper()
	sb, err := c.AddStandby(context.Background(), opts)
	if errors.Is(err, pgcluster.ErrNoBaseBackup) && (os.Getenv("CI") != "true" || os.Getenv("MILLRACE_PG") != "") {
		t.Skipf("a hot standby needs pg_basebackup: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sb
}
