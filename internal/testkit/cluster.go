package testkit

import (
	"context"
	"os"

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
