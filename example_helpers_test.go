package millrace_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/pgtest"
)

var (
	exampleN        int
	exampleTemplate string
)

// exampleDatabase gives each runnable example a fresh, migrated database on
// the test server (the throwaway cluster, or DATABASE_URL): a copy of a
// template migrated once per test binary, which is much faster than
// migrating each one.
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
		name := fmt.Sprintf("example_tpl_%d", os.Getpid())
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
	name := fmt.Sprintf("example_%d_%d", os.Getpid(), exampleN)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+exampleTemplate); err != nil {
		panic(err)
	}
	pool, err := pgxpool.New(ctx, pgtest.WithDatabase(base, name))
	if err != nil {
		panic(err)
	}
	return pool
}

// waitFinished polls JobByID until job id has finished (completed,
// discarded or cancelled) and returns it with its history.
func waitFinished(ctx context.Context, db millrace.DB, id int64) millrace.JobInfo {
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := millrace.JobByID(ctx, db, id)
		if err == nil && (j.State == millrace.JobCompleted || j.State == millrace.JobDiscarded || j.State == millrace.JobCancelled) {
			return j
		}
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("job %d did not finish: state %q, err %v", id, j.State, err))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// printAttempts prints a job's finished attempts, oldest first.
func printAttempts(j millrace.JobInfo) {
	for _, a := range j.Attempts {
		if a.Error != "" {
			fmt.Printf("attempt %d %s: %s\n", a.Attempt, a.State, a.Error)
		} else {
			fmt.Printf("attempt %d %s\n", a.Attempt, a.State)
		}
	}
}
