// Package pgtest gives tests and the bench a PostgreSQL server: a
// throwaway cluster shared by a test binary (package pgcluster, which
// starts it), or the server DATABASE_URL names, and a fresh database per
// test.
package pgtest

import (
	"context"

	"github.com/millrace/millrace/millracetest/pgcluster"
)

// Cluster is a running throwaway PostgreSQL server (pgcluster.Cluster).
type Cluster = pgcluster.Cluster

// Standby is a streaming hot standby of a Cluster (pgcluster.Standby).
type Standby = pgcluster.Standby

// Options configure a cluster (pgcluster.Options).
type Options = pgcluster.Options

// DefaultSettings are the server settings every cluster starts with unless
// overridden (pgcluster.DefaultSettings).
var DefaultSettings = pgcluster.DefaultSettings

// Start creates and starts a new cluster; the caller must Stop it.
func Start(ctx context.Context, opts Options) (*Cluster, error) { return pgcluster.Start(ctx, opts) }

// BinDir finds the PostgreSQL server binaries (pgcluster.BinDir).
func BinDir() (string, error) { return pgcluster.BinDir() }
