package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/testkit"
)

// TestRunTxOverridesDefaults: a database whose defaults are REPEATABLE
// READ, a 100 ms statement and lock timeout, and asynchronous commit off.
// A protocol transaction runs at READ COMMITTED without either timeout
// (with AsyncCommit, committing asynchronously), in every query exec mode
// pgx offers (a transaction pooler needs one without named statements),
// and nothing it sets outlives it.
func TestRunTxOverridesDefaults(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	db := admin.Config().Database
	for _, set := range []string{"default_transaction_isolation = 'repeatable read'", "statement_timeout = '100ms'", "lock_timeout = '100ms'"} {
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET %s", pgx.Identifier{db}.Sanitize(), set)); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg, err := pgx.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			cfg.DefaultQueryExecMode = mode
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			// A lock held elsewhere for longer than the role's lock_timeout.
			tx, err := admin.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(42)"); err != nil {
				t.Fatal(err)
			}
			released := make(chan struct{})
			go func() {
				// Released once the transaction below has waited for it
				// longer than the role's lock_timeout.
				defer close(released)
				defer tx.Rollback(ctx)
				conn2, err := pgx.Connect(ctx, url)
				if err != nil {
					return
				}
				defer conn2.Close(ctx)
				for {
					var waited bool
					if err := conn2.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
						WHERE l.locktype = 'advisory' AND NOT l.granted AND clock_timestamp() - a.query_start > interval '300 ms')`).Scan(&waited); err != nil || waited {
						return
					}
				}
			}()
			for _, o := range []TxOpts{{}, {AsyncCommit: true}} {
				var iso, stmt, lock, sync string
				err = RunTx(ctx, conn, o, scanOne(&iso, &stmt, &lock, &sync),
					`SELECT current_setting('transaction_isolation'), current_setting('statement_timeout'),
					        current_setting('lock_timeout'), current_setting('synchronous_commit')
					 FROM (SELECT pg_advisory_xact_lock(42), pg_sleep(0.2)) x`)
				if err != nil {
					t.Fatalf("%+v: %v", o, err)
				}
				want := "on"
				if o.AsyncCommit {
					want = "off"
				}
				<-released
				if iso != "read committed" || stmt != "0" || lock != "0" || sync != want {
					t.Fatalf("%+v: inside: isolation %q, statement_timeout %q, lock_timeout %q, synchronous_commit %q", o, iso, stmt, lock, sync)
				}
			}
			var iso, stmt, sync string
			if err := conn.QueryRow(ctx, "SELECT current_setting('transaction_isolation'), current_setting('statement_timeout'), current_setting('synchronous_commit')").Scan(&iso, &stmt, &sync); err != nil {
				t.Fatal(err)
			}
			if iso != "repeatable read" || stmt != "100ms" || sync != "on" {
				t.Fatalf("after: isolation %q, statement_timeout %q, synchronous_commit %q: a setting outlived its transaction", iso, stmt, sync)
			}
			// A failed transaction is rolled back: the connection is usable.
			err = RunTx(ctx, conn, TxOpts{}, nil, "SELECT 1/0")
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
				t.Fatalf("division by zero: %v", err)
			}
			if st := conn.PgConn().TxStatus(); st != 'I' {
				t.Fatalf("after a failed transaction the connection is in state %c, want idle", st)
			}
			var one int
			if err := RunTx(ctx, conn, TxOpts{KeepTimeouts: true}, scanOne(&one), "SELECT 1"); err != nil || one != 1 {
				t.Fatalf("after a failure: %d, %v", one, err)
			}
		})
	}
}

// TestRereadSendsAgainAReadTheServerCancelled: a read whose statement the
// server cancels (pg_cancel_backend, as the leader cancels a reader that
// keeps a slot of the ring) is sent again on a pool and answers; in a
// transaction it fails at once with 57014.
func TestRereadSendsAgainAReadTheServerCancelled(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var calls int
	read := func(q Querier) func() (int, error) {
		return func() (int, error) {
			calls++
			var n int
			if calls == 1 {
				var sent bool
				err := q.QueryRow(ctx, "SELECT pg_cancel_backend(pg_backend_pid()), pg_sleep(5)").Scan(&sent, nil)
				return 0, err
			}
			err := q.QueryRow(ctx, "SELECT 42").Scan(&n)
			return n, err
		}
	}
	n, err := Reread(ctx, pool, read(pool))
	if err != nil || n != 42 || calls != 2 {
		t.Fatalf("on a pool: %d, %v after %d calls; want 42 after 2", n, err, calls)
	}
	calls = 0
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = Reread(ctx, tx, read(tx))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || calls != 1 {
		t.Fatalf("in a transaction: %v after %d calls; want 57014 after 1", err, calls)
	}
}

// TestReadInsideAnOpenTransaction: a read given a connection with a
// transaction open (BEGIN sent by the caller, as pgx.Conn allows) runs in
// that transaction; it neither commits nor ends it. Before Read, the
// admin calls and reads sent their own BEGIN and COMMIT on it, which
// committed the caller's transaction: its insert stayed after ROLLBACK.
func TestReadInsideAnOpenTransaction(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE public.w (x int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO public.w VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := ReadCommitted(ctx, conn, "SELECT count(*) FROM public.w", nil, &n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the read saw %d rows; want the open transaction's 1", n)
	}
	if s := conn.PgConn().TxStatus(); s != 'T' {
		t.Errorf("after the read the connection's transaction status is %q; want it still open ('T')", s)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM public.w").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows after the caller's ROLLBACK; want 0 (the read committed the caller's transaction)", n)
	}
}
