package testkit

import (
	"context"
	"os"
	"testing"

	"github.com/millrace/millrace/millracetest/pgcluster"
)

// PgBouncer is a running PgBouncer (pgcluster.PgBouncer).
type PgBouncer = pgcluster.PgBouncer

// PgBouncerOptions configure a PgBouncer (pgcluster.PgBouncerOptions).
type PgBouncerOptions = pgcluster.PgBouncerOptions

// PgBouncerBin finds the pgbouncer binary (pgcluster.PgBouncerBin).
func PgBouncerBin() (string, error) { return pgcluster.PgBouncerBin() }

// NewPgBouncer starts PgBouncer in front of the server of target for one
// test and stops it when the test ends. Without a pgbouncer binary the
// test is skipped, unless CI is set (then it fails: .ci/run installs it).
func NewPgBouncer(t testing.TB, target string, opts PgBouncerOptions) *PgBouncer {
	t.Helper()
	if _, err := PgBouncerBin(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	b, err := pgcluster.StartPgBouncer(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pgbouncer log:\n%s", b.Log())
		}
		b.Stop()
	})
	return b
}
