package storage

import (
	"context"
	"errors"
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

// Register records a client process whose lease lasts lease from now
// (millrace.register) and returns its id. The process stays alive while it
// calls Beat before its lease runs out.
func (s *Store) Register(ctx context.Context, name, host string, pid int, lease time.Duration) (int32, error) {
	var id int32
	err := s.Pool.QueryRow(ctx, "SELECT millrace.register($1, $2, $3, $4)", name, host, pid, lease).Scan(&id)
	return id, err
}

// Beat renews process owner's lease for lease from now (millrace.beat). It
// reports false when the process is dead already (its lease ran out, or it
// was forgotten): its batches may have been released, and it must
// register again.
func (s *Store) Beat(ctx context.Context, owner int32, lease time.Duration) (bool, error) {
	var ok bool
	err := s.Pool.QueryRow(ctx, "SELECT millrace.beat($1, $2)", owner, lease).Scan(&ok)
	return ok, err
}

// Lead is leadership as a lease (millrace.lead). With term 0 it tries to
// take over: it returns a new term when no term runs, else 0. With a term
// it renews it: it returns the term, or 0 when the term is over and the
// caller must stop leading. It runs at READ COMMITTED whatever the
// database's default, so that it reads the ledger after its lock.
func (s *Store) Lead(ctx context.Context, owner int32, term int64, lease time.Duration) (int64, error) {
	var got *int64
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT millrace.lead($1, $2, $3)", owner, termArg(term), lease).Scan(&got)
	})
	if err != nil || got == nil {
		return 0, err
	}
	return *got, nil
}

// Resign ends leader term term of owner now (millrace.resign), so another
// process takes over at its next attempt.
func (s *Store) Resign(ctx context.Context, owner int32, term int64) error {
	_, err := s.Pool.Exec(ctx, "SELECT millrace.resign($1, $2)", owner, term)
	return err
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
// charged for that crash).
func (s *Store) MarkStarted(ctx context.Context, owner int32, starts []Start) (fenced []int64, err error) {
	if len(starts) == 0 {
		return nil, nil
	}
	ticks, tokens, jobs := make([]int64, len(starts)), make([]int64, len(starts)), make([]int64, len(starts))
	for i, st := range starts {
		ticks[i], tokens[i], jobs[i] = st.Batch.TickID, st.Batch.Token, st.Job.ID
	}
	var b pgx.Batch
	b.Queue(asyncCommit)
	b.Queue("SELECT millrace.mark_started($1, $2, $3, $4)", owner, ticks, tokens, jobs)
	br := s.Pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	return out, br.Close()
}
