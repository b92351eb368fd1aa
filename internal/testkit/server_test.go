package testkit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

// tmpdirSet is whether TMPDIR was set before TestMain ran (package
// variables are initialized first).
var _, tmpdirSet = os.LookupEnv("TMPDIR")

func TestEmptyDBURLIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := testkit.EmptyDBURL(t), testkit.EmptyDBURL(t)
	if a == b {
		t.Fatal("two databases share a URL")
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a(x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	cb.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = 'only_in_a'").Scan(&n)
	if n != 0 {
		t.Error("a table created in one test database is visible in another")
	}
}

// A test cluster runs with fsync off, unless the test asks otherwise.
func TestClustersRunWithoutFsync(t *testing.T) {
	ctx := context.Background()
	show := func(url string) string {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var v string
		if err := c.QueryRow(ctx, "SHOW fsync").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show(testkit.EmptyDBURL(t)); v != "off" && os.Getenv("DATABASE_URL") == "" {
		t.Errorf("the shared test cluster: fsync %s, want off", v)
	}
	cl, err := testkit.Start(ctx, testkit.Options{Settings: map[string]string{"fsync": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	if v := show(cl.URL("postgres")); v != "on" {
		t.Errorf("a cluster started with fsync on: fsync %s", v)
	}
}

// A test cluster's files go to a RAM-backed directory when the machine has
// one, and to MILLRACE_TEST_PGDIR when that is set; stopping it removes
// them.
func TestClustersRunInRAM(t *testing.T) {
	ctx := context.Background()
	ram := pgcluster.RAMDir(4 << 30)
	want := os.Getenv("MILLRACE_TEST_PGDIR")
	if want == "" {
		want = ram
	}
	if !tmpdirSet && os.Getenv("MILLRACE_TEST_PGDIR") == "" && ram != "" && os.TempDir() != ram {
		t.Errorf("the test binary's temp dir is %s, want %s (Main: tempInRAM)", os.TempDir(), ram)
	}
	if want == "" {
		t.Skip("no RAM-backed directory with 4 GB free (/dev/shm) and no MILLRACE_TEST_PGDIR")
	}
	cl, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(cl.Dir) != filepath.Clean(want) {
		t.Errorf("the cluster's files are in %s, want a directory in %s", cl.Dir, want)
	}
	cl.Stop()
	if _, err := os.Stat(cl.Dir); !os.IsNotExist(err) {
		t.Errorf("after Stop, %s: %v, want it gone", cl.Dir, err)
	}
	// Not t.TempDir: the postgres OS user (when run as root) must reach it.
	dir, err := os.MkdirTemp("", "millrace-pgdir-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MILLRACE_TEST_PGDIR", dir)
	cl, err = testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	if filepath.Dir(cl.Dir) != dir {
		t.Errorf("with MILLRACE_TEST_PGDIR=%s the cluster's files are in %s", dir, cl.Dir)
	}
}
