package storage

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Liveness and leadership are leases decided by the server's clock and
// renewed by progress (docs/architecture.md, "Liveness and leadership"):
// a process is alive while its newest heartbeat's lease runs; the leader
// is the holder of the newest leader term that has not run out. Neither
// depends on a connection.

// Default leases.
const (
	// DefaultProcessLease is how long a process stays alive without
	// renewing its heartbeat: a killed or stopped process's batches are
	// released at most this long (plus a maintenance round) after its last
	// heartbeat.
	DefaultProcessLease = 15 * time.Second
	// DefaultLeaderLease is how long a leader term lasts without renewal:
	// another process takes over at most this long (plus its attempt
	// interval, a second) after the leader's last renewal.
	DefaultLeaderLease = 10 * time.Second
)

// ErrFenced is returned (wrapped) by a maintenance step called with a
// leader term that is no longer the newest running term: the caller must
// stop leading.
var ErrFenced = errors.New("millrace: this process no longer leads")

// fencedCode is the SQLSTATE millrace.fence_leader raises.
const fencedCode = "MR001"

// IsFenced reports whether err says the caller's leader term is over.
func IsFenced(err error) bool {
	if errors.Is(err, ErrFenced) {
		return true
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == fencedCode
}

// fenced turns a refusal of the caller's term into ErrFenced.
func fenced(err error) error {
	if err != nil && !errors.Is(err, ErrFenced) && IsFenced(err) {
		return errors.Join(ErrFenced, err)
	}
	return err
}

// termArg is a leader term as an SQL argument: 0 (an operator's call, not
// a leader's) is NULL.
func termArg(term int64) *int64 {
	if term == 0 {
		return nil
	}
	return &term
}

// SessionName is the application_name of the session connection of
// process id (the one that LISTENs), as pg_stat_activity shows it: a
// leader tells a millrace process's session from another backend by it.
func SessionName(id int32) string { return SessionNamePrefix + strconv.Itoa(int(id)) }

// SessionNamePrefix starts the application_name of every millrace
// process's session connection (SessionName).
const SessionNamePrefix = "millrace process "

// Each call below runs in its own protocol transaction (RunTx: READ
// COMMITTED, timeouts off, one round trip), sent again a few times when
// the server rolled it back for a reason of its own or the connection was
// lost (Retryable), as long as ctx lasts: a pooled connection the server
// closed while idle (idle_session_timeout) costs a retry, not a missed
// renewal.

// leaseTries is how many times a lease call is sent at most.
const leaseTries = 4

// Register records a client process whose lease lasts lease from now
// (millrace.register) and returns its id. The process stays alive while it
// calls Beat before its lease runs out. A replay after a lost reply
// registers another id, which holds nothing and is forgotten once its
// lease runs out.
func (s *Store) Register(ctx context.Context, name, host string, pid int, lease time.Duration) (int32, error) {
	var id int32
	err := retry(ctx, leaseTries, func() error {
		return s.tx(ctx, scanOne(&id), "SELECT millrace.register(p_name => $1, p_host => $2, p_pid => $3, p_lease => $4)", name, host, pid, lease)
	})
	return id, err
}

// Beat renews process owner's lease for lease from now (millrace.beat). It
// reports false when the process is dead already (its lease ran out, or it
// was forgotten): its batches may have been released, and it must
// register again.
func (s *Store) Beat(ctx context.Context, owner int32, lease time.Duration) (bool, error) {
	var ok bool
	err := retry(ctx, leaseTries, func() error {
		return s.tx(ctx, scanOne(&ok), "SELECT millrace.beat($1, $2)", owner, lease)
	})
	return ok, err
}

// Lead is leadership as a lease (millrace.lead). With term 0 it tries to
// take over: it returns a new term when no term runs, else 0. With a term
// it renews it: it returns the term, or 0 when the term is over and the
// caller must stop leading. It runs at READ COMMITTED whatever the
// database's default, so that it reads the ledger after its lock. A
// renewal is sent again on a Retryable error; a takeover is not (a
// takeover that committed and lost its reply would be refused when
// replayed: the caller tries again later, and the term it took runs out).
func (s *Store) Lead(ctx context.Context, owner int32, term int64, lease time.Duration) (int64, error) {
	var got *int64
	tries := leaseTries
	if term == 0 {
		tries = 1
	}
	err := retry(ctx, tries, func() error {
		return s.tx(ctx, scanOne(&got), "SELECT millrace.lead($1, $2, $3)", owner, termArg(term), lease)
	})
	if err != nil || got == nil {
		return 0, err
	}
	return *got, nil
}

// Resign ends leader term term of owner now (millrace.resign), so another
// process takes over at its next attempt.
func (s *Store) Resign(ctx context.Context, owner int32, term int64) error {
	var ok bool
	return retry(ctx, leaseTries, func() error {
		return s.tx(ctx, scanOne(&ok), "SELECT millrace.resign($1, $2)", owner, term)
	})
}

// Start is a job about to start: its batch and the batch's lease token.
type Start struct {
	Batch *Batch
	Job   *Job
}

// MarkStarted records, before their handlers run, that process owner
// starts these jobs (millrace.mark_started), so that if the process dies
// while they run each is charged an attempt. It returns the batches
// released meanwhile (fenced): their jobs must not start. The mark commits
// asynchronously (a crash of Postgres may lose it; then the jobs are not
// charged for that crash). The caller retries a Retryable error (a replay
// marks the same jobs again, which changes nothing).
func (s *Store) MarkStarted(ctx context.Context, owner int32, starts []Start) (fenced []int64, err error) {
	if len(starts) == 0 {
		return nil, nil
	}
	ticks, tokens, jobs := make([]int64, len(starts)), make([]int64, len(starts)), make([]int64, len(starts))
	for i, st := range starts {
		ticks[i], tokens[i], jobs[i] = st.Batch.TickID, st.Batch.Token, st.Job.ID
	}
	err = PoolTx(ctx, s.Pool, TxOpts{AsyncCommit: true}, func(rows pgx.Rows) error {
		var err error
		fenced, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	}, "SELECT millrace.mark_started(p_owner => $1, p_tick => $2, p_token => $3, p_job => $4)", owner, ticks, tokens, jobs)
	if err != nil {
		return nil, err
	}
	return fenced, nil
}
