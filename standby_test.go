package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// TestStandbySaysPointAtThePrimary: a client and a producer pointed at a
// hot standby fail at once with one line that names the server, says it
// is a standby and says to point at the primary (ErrStandby), not with
// "cannot execute nextval() in a read-only transaction" (issue 31, 9); so
// does a client whose Config.SessionURL reaches a standby. A read-only
// transaction on the primary is not taken for a standby.
func TestStandbySaysPointAtThePrimary(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: a standby needs a throwaway cluster of the test's own")
	}
	ctx := context.Background()
	start := time.Now()
	cl, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	primary := poolOn(t, cl.URL("postgres"))
	if err := millrace.Migrate(ctx, primary); err != nil {
		t.Fatal(err)
	}
	sb := testkit.AddStandby(t, cl, testkit.Options{})
	defer sb.Stop()
	t.Logf("primary and standby started in %v", time.Since(start).Round(time.Millisecond))
	standby := poolOn(t, sb.URL("postgres"))
	where := fmt.Sprintf("127.0.0.1:%d", sb.Port)

	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s on the standby: no error", what)
			return
		}
		msg := err.Error()
		t.Logf("%s: %s", what, msg)
		point := "point the pool (DATABASE_URL) at the primary"
		if what == "Start with SessionURL" {
			point = "point Config.SessionURL at the primary"
		}
		if want := "millrace: the server at " + where + " is a hot standby (read-only, in recovery): " + point; !errors.Is(err, millrace.ErrStandby) || msg != want {
			t.Errorf("%s on the standby: %q (ErrStandby: %v), want %q", what, msg, errors.Is(err, millrace.ErrStandby), want)
		}
		var pe *pgconn.PgError
		if !strings.HasPrefix(what, "Start") && (!errors.As(err, &pe) || pe.Code != "25006") {
			t.Errorf("%s on the standby: %v, want the server's error (25006) still wrapped", what, err)
		}
	}

	// A worker: Start refuses before it registers.
	worker, err := millrace.NewClient(standby, millrace.Config{Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}}, Workers: countingWorkers(&seen{runs: map[int]int{}}, 0)})
	if err != nil {
		t.Fatal(err)
	}
	check("Start", worker.Start(ctx))
	// The pool on the primary, the session connection on the standby.
	split, err := millrace.NewClient(primary, millrace.Config{Logger: quietLogger(), SessionURL: sb.URL("postgres"),
		Queues: map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}}, Workers: countingWorkers(&seen{runs: map[int]int{}}, 0)})
	if err != nil {
		t.Fatal(err)
	}
	err = split.Start(ctx)
	if err == nil {
		defer split.Stop(ctx)
	}
	check("Start with SessionURL", err)

	// A producer: each way of inserting.
	producer, err := millrace.NewClient(standby, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = producer.Insert(ctx, countArgs{N: 1}, nil)
	check("Insert", err)
	_, err = producer.InsertMany(ctx, []millrace.InsertManyParams{{Args: countArgs{N: 2}}, {Args: countArgs{N: 3}}})
	check("InsertMany", err)
	err = pgx.BeginFunc(ctx, standby, func(tx pgx.Tx) error {
		_, err := producer.InsertTx(ctx, tx, countArgs{N: 4}, nil)
		return err
	})
	check("InsertTx", err)

	// A read-only transaction on the primary fails as it did: it is no
	// standby.
	onPrimary, err := millrace.NewClient(primary, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginTxFunc(ctx, primary, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := onPrimary.InsertTx(ctx, tx, countArgs{N: 5}, nil)
		return err
	})
	var pe *pgconn.PgError
	if errors.Is(err, millrace.ErrStandby) || !errors.As(err, &pe) || pe.Code != "25006" {
		t.Errorf("InsertTx in a read-only transaction on the primary: %v, want the server's 25006, not ErrStandby", err)
	}
	if _, err := onPrimary.Insert(ctx, countArgs{N: 6}, nil); err != nil {
		t.Errorf("Insert on the primary: %v", err)
	}
}
