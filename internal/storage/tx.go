package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace/internal/schema"
)

// Every protocol transaction runs at the isolation and with the timeouts
// it was designed for, whatever the database's or role's defaults
// (DESIGN.md P14):
//
//   - READ COMMITTED: the protocol's functions take an advisory lock and
//     then read what the previous holder wrote, which needs a snapshot
//     taken after the lock. Under a default of REPEATABLE READ the
//     snapshot of a single-statement transaction is taken before its
//     first lock, and a second claimer would not see the first one's tick.
//   - statement_timeout and lock_timeout off: the protocol's statements
//     wait only on the protocol's own short locks, and maintenance bounds
//     its own work and takes its table locks with NOWAIT or a lock_timeout
//     set in the function itself. A role's statement_timeout would cancel
//     a rotation carrying a large backlog at every round.
//
// The transaction is sent as one pipeline (BEGIN, the settings, the
// statement, COMMIT, one Sync): one round trip, as a single statement
// would take, never idle in transaction between its statements, and it
// works through a transaction-mode pooler, which refuses unknown startup
// parameters and may give each transaction another server connection.
const (
	beginRC = "BEGIN ISOLATION LEVEL READ COMMITTED"
	// noTimeouts sets the timeouts for the rest of the transaction. A
	// pipeline starts a statement's timeout at each statement, so the
	// statements after this one run without one. transaction_timeout
	// (PostgreSQL 17 and later; the CASE leaves older servers, which do
	// not know it, alone) runs from the transaction's start: set to 0
	// inside it, the server stops its timer. A role's 1 s ended the
	// session of every reclaim that carried a backlog for longer, and the
	// ring stopped (TestTransactionTimeout).
	noTimeouts      = "SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true), " + schema.NoTxTimeout
	noTimeoutsAsync = "SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true), set_config('synchronous_commit', 'off', true), " + schema.NoTxTimeout
)

// TxOpts says how a protocol transaction runs.
type TxOpts struct {
	// KeepTimeouts keeps the role's statement_timeout and lock_timeout
	// (for statements a caller's context bounds, such as an insert);
	// otherwise both are off for the transaction.
	KeepTimeouts bool
	// AsyncCommit commits without waiting for the WAL flush (a claim: see
	// Store.Claim).
	AsyncCommit bool
}

func (o TxOpts) settings() string {
	switch {
	case o.KeepTimeouts && o.AsyncCommit:
		return "SELECT set_config('synchronous_commit', 'off', true)"
	case o.KeepTimeouts:
		return ""
	case o.AsyncCommit:
		return noTimeoutsAsync
	default:
		return noTimeouts
	}
}

// Conn is a connection a protocol transaction can run on: a *pgx.Conn.
type Conn interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	PgConn() *pgconn.PgConn
	Close(ctx context.Context) error
}

// RunTx runs sql with args in its own READ COMMITTED transaction on conn,
// in one round trip (see above), and calls scan with its rows (scan may be
// nil; it must read the rows it wants and may stop early). A transaction
// left open by a failure is rolled back, so that conn can be used again.
func RunTx(ctx context.Context, conn Conn, o TxOpts, scan func(pgx.Rows) error, sql string, args ...any) error {
	return runTx(ctx, conn, o, stmt{sql: sql, args: args, scan: scan})
}

// stmt is one statement of a protocol transaction and what reads its rows
// (nil: none are read).
type stmt struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
}

// runTx is RunTx with several statements, run in order in the one
// transaction and round trip.
func runTx(ctx context.Context, conn Conn, o TxOpts, stmts ...stmt) error {
	var b pgx.Batch
	b.Queue(beginRC)
	set := o.settings()
	if set != "" {
		b.Queue(set)
	}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, &b)
	err := readTx(br, set != "", stmts)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		pc := conn.PgConn()
		if !pc.IsClosed() && pc.TxStatus() != 'I' {
			// Roll back what the failure left open (a pipeline stops at
			// the first error and leaves an explicit transaction aborted).
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
				conn.Close(rctx)
			}
			cancel()
		}
	}
	return err
}

func readTx(br pgx.BatchResults, hasSet bool, stmts []stmt) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	if hasSet {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	for _, st := range stmts {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if st.scan != nil {
			err = st.scan(rows)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("millrace: transaction ended with %s, not COMMIT", tag)
	}
	return nil
}

// PoolTx is RunTx on a connection of pool.
func PoolTx(ctx context.Context, pool *pgxpool.Pool, o TxOpts, scan func(pgx.Rows) error, sql string, args ...any) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return RunTx(ctx, c.Conn(), o, scan, sql, args...)
}

// ReadCommitted runs sql with args on q in its own READ COMMITTED
// transaction when q is a pool or a connection, in one round trip, keeping
// the role's timeouts (the caller's context bounds the call), and scans its
// one row into dest (no row: pgx.ErrNoRows). Inside a caller's transaction
// (any other Querier, such as a pgx.Tx, or a connection with a transaction
// open) it runs there: that transaction must be READ COMMITTED. The
// operator actions need it: they take a lock and then read what its
// previous holder wrote, which a snapshot taken before the lock (a default
// of REPEATABLE READ) misses.
func ReadCommitted(ctx context.Context, q Querier, sql string, args []any, dest ...any) error {
	return Read(ctx, q, scanOne(dest...), sql, args...)
}

// Read runs sql with args on q as ReadCommitted does and calls scan with
// its rows (scan must read the rows it wants; it may stop early). The
// reads of the queue's partitioned tables go through it: at a database
// default of SERIALIZABLE a statement takes a predicate lock on each
// partition it reads (a read of queue_counts about 190), kept until
// every overlapping SERIALIZABLE transaction ends, and a dashboard's polls
// could fill the server's shared table of them, failing every
// SERIALIZABLE statement of the cluster (docs/deploy.md). At READ
// COMMITTED a read takes none.
func Read(ctx context.Context, q Querier, scan func(pgx.Rows) error, sql string, args ...any) error {
	o := TxOpts{KeepTimeouts: true}
	switch d := q.(type) {
	case *pgxpool.Pool:
		return PoolTx(ctx, d, o, scan, sql, args...)
	case *pgx.Conn:
		if d.PgConn().TxStatus() == 'I' {
			return RunTx(ctx, d, o, scan, sql, args...)
		}
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// readRows is Read collecting every row with fn.
func readRows[T any](ctx context.Context, q Querier, fn pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	var out []T
	err := Read(ctx, q, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, fn)
		return err
	}, sql, args...)
	return out, err
}

// tx is PoolTx on the store's pool with timeouts off.
func (s *Store) tx(ctx context.Context, scan func(pgx.Rows) error, sql string, args ...any) error {
	return PoolTx(ctx, s.Pool, TxOpts{}, scan, sql, args...)
}

// scanOne scans the single row of a statement into dest (no row: ErrNoRows).
func scanOne(dest ...any) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		return rows.Scan(dest...)
	}
}

// Retryable reports whether err may succeed if the same transaction is
// sent again: the connection or server went away, or the server rolled the
// transaction back for a reason of its own (a serialization failure, a
// deadlock, a lock or statement timeout, a cancel, too many connections),
// as opposed to rejecting what the statement asked.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if IsConnError(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch {
	case len(pgErr.Code) == 5 && (pgErr.Code[:2] == "40" || pgErr.Code[:2] == "53" || pgErr.Code[:2] == "08"):
		// transaction rollback (serialization failure, deadlock),
		// insufficient resources, connection exception
		return true
	case pgErr.Code == "55P03" || pgErr.Code == "57014":
		// lock_not_available, query_canceled (a statement or lock timeout,
		// or a cancel request)
		return true
	}
	return false
}

// retry calls f until it succeeds, fails with an error that is not
// Retryable, has been called tries times, or ctx ends; it waits 10 ms
// before the second call, twice as long before each next one, at most
// 500 ms. It returns f's last error.
func retry(ctx context.Context, tries int, f func() error) error {
	wait := 10 * time.Millisecond
	for i := 1; ; i++ {
		err := f()
		if err == nil || i >= tries || !Retryable(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
