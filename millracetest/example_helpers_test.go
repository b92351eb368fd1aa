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

var exampleN int

// exampleDatabase gives each runnable example a fresh, migrated database on
// the test server (the throwaway cluster, or DATABASE_URL).
func exampleDatabase() *pgxpool.Pool {
	ctx := context.Background()
	base, err := pgtest.ServerURL()
	if err != nil {
		panic(err)
	}
	exampleN++
	name := fmt.Sprintf("mtexample_%d_%d", os.Getpid(), exampleN)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		panic(err)
	}
	pool, err := pgxpool.New(ctx, pgtest.WithDatabase(base, name))
	if err != nil {
		panic(err)
	}
	if err := millrace.Migrate(ctx, pool); err != nil {
		panic(err)
	}
	return pool
}

// printT stands in for the *testing.T of a real test in the examples: it
// prints what a failing assertion reports instead of failing the example.
type printT struct{ testing.TB }

func (printT) Helper() {}

func (printT) Fatalf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
