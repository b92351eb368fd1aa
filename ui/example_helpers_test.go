package ui_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/ops/opstest"
	"github.com/millrace/millrace/internal/pgtest"
)

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
	name := fmt.Sprintf("example_ui_%d_%d", os.Getpid(), exampleN)
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
	if err := opstest.Prepare(ctx, pool); err != nil {
		panic(err)
	}
	return pool
}
