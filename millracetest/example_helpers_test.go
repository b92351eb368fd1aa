package millracetest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	exampleN        int
	exampleTemplate string
)

// exampleDatabase gives each runnable example a fresh, migrated database on
// the test server (the throwaway cluster, or DATABASE_URL): a copy of a
// template migrated once per test binary.
func exampleDatabase() *pgxpool.Pool {
	ctx := context.Background()
	base, err := pgtest.ServerURL()
	if err != nil {
		panic(err)
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)
	if exampleTemplate == "" {
		name := fmt.Sprintf("mtexample_tpl_%d", os.Getpid())
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			panic(err)
		}
		pool, err := pgxpool.New(ctx, pgtest.WithDatabase(base, name))
		if err != nil {
			panic(err)
		}
		err = millrace.Migrate(ctx, pool)
		pool.Close()
		if err != nil {
			panic(err)
		}
		exampleTemplate = name
	}
	exampleN++
	name := fmt.Sprintf("mtexample_%d_%d", os.Getpid(), exampleN)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+exampleTemplate); err != nil {
		panic(err)
	}
	pool, err := pgxpool.New(ctx, pgtest.WithDatabase(base, name))
	if err != nil {
		panic(err)
	}
	return pool
}

// printT stands in for the *testing.T of a real test in the examples: it
// prints what a failing assertion reports instead of failing the example.
type printT struct{ testing.TB }

func (printT) Helper() {}

func (printT) Fatalf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
