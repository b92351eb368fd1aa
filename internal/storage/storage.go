// Package storage is the Go side of the millrace storage protocol: enqueue,
// claim of a capped batch by snapshot tick, per-job acks flushed in bulk
// with fencing and idempotence, and the maintenance steps (rotation and
// reclaim of the ring, rescue, promotion) that are the only writers allowed
// to run at maintenance cadence. Every statement calls a function of schema
// millrace (internal/schema/migrations); see docs/architecture.md for the
// invariants each keeps.
package storage

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LockSpace is the first key of millrace's process and leader advisory
// locks (millrace.lock_space() in SQL). Second keys: 0 the leader, a
// process id for process liveness. Claims, fences, flushes and maintenance
// each have their own key space (millrace.claim_space() and so on).
const LockSpace = 1836412274

// Ack states, as stored in millrace.ack.state.
const (
	AckCompleted int16 = 1
	AckRetried   int16 = 2
	AckDiscarded int16 = 3
)

// Job is a stored job as a worker receives it.
type Job struct {
	ID          int64
	Queue       string
	Kind        string
	Args        []byte
	Priority    int16
	Attempt     int // attempts made before this one
	MaxAttempts int
	CreatedAt   time.Time
}

// Batch is a claimed tick: jobs of one queue that committed between two
// snapshots, leased to one process under a fencing token.
type Batch struct {
	Queue  string
	TickID int64
	Token  int64 // fencing token: TickID for the first lease, higher after a release
	Jobs   []Job
}

// NewJob is a job to enqueue.
type NewJob struct {
	Queue       string
	Kind        string
	Args        []byte // JSON
	Priority    int16
	RunAt       time.Time // zero: now
	MaxAttempts int
}

// Ack is the outcome of one attempt of one job of a batch.
type Ack struct {
	Batch *Batch
	Job   *Job
	State int16
	Err   string
	// RetryAt is when a retried job runs again (State == AckRetried).
	RetryAt time.Time
}

// Limits bound one claim.
type Limits struct {
	MaxJobs  int   // at most this many jobs
	MaxBytes int64 // stop once the batch's args reach this many bytes (at least one job)
}

// Store runs the protocol's statements on a pool.
type Store struct {
	Pool *pgxpool.Pool
}

// Querier is what Enqueue needs: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Enqueue inserts one job through millrace.enqueue on q (inside q's
// transaction if q is one) and returns its id. notify asks Postgres for a
// NOTIFY in the same transaction (the client usually passes false and
// coalesces its own notifications).
func (s *Store) Enqueue(ctx context.Context, q Querier, j NewJob, notify bool) (int64, error) {
	var runAt any
	if !j.RunAt.IsZero() {
		runAt = j.RunAt
	}
	var id int64
	err := q.QueryRow(ctx, "SELECT millrace.enqueue($1, $2::jsonb, $3, $4::int, $5, $6, $7)",
		j.Kind, string(j.Args), j.Queue, int(j.Priority), runAt, j.MaxAttempts, notify).Scan(&id)
	return id, err
}

// EnqueueMany inserts jobs in one statement through millrace.enqueue_many
// (inside q's transaction if q is one) and returns their ids in order. It
// sends one NOTIFY per queue that got a job due now.
func EnqueueMany(ctx context.Context, q Querier, jobs []NewJob) ([]int64, error) {
	n := len(jobs)
	kinds, queues := make([]string, n), make([]string, n)
	args := make([]string, n)
	prios, maxAtt := make([]int32, n), make([]int32, n)
	runAt := make([]*time.Time, n)
	for i, j := range jobs {
		kinds[i], queues[i], args[i] = j.Kind, j.Queue, string(j.Args)
		prios[i], maxAtt[i] = int32(j.Priority), int32(j.MaxAttempts)
		if !j.RunAt.IsZero() {
			t := j.RunAt
			runAt[i] = &t
		}
	}
	rows, err := q.Query(ctx, "SELECT millrace.enqueue_many($1, $2::jsonb[], $3, $4, $5, $6)",
		kinds, args, queues, prios, runAt, maxAtt)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Claim sends claimSQL behind asyncCommit in one pgx batch, which Postgres
// runs as one implicit transaction: the claim's commit does not wait for its
// WAL to reach disk.
const (
	asyncCommit = "SELECT set_config('synchronous_commit', 'off', true)"
	claimSQL    = "SELECT tick_id, token, id, kind, args, priority, attempt, max_attempts, created_at FROM millrace.claim($1, $2, $3, $4, $5, $6)"
)

// Claim takes the next batch of queue for process owner: a batch whose reply
// an earlier call with the same req lost (when retry is set), a batch
// released by the leader, or the next jobs committed since the queue's
// newest tick, within lim. It returns nil when there is nothing to run.
//
// req identifies the call: after an error that may have come after the
// server committed (a lost reply), call again with the same req and retry
// set, and the batch that call committed comes back instead of being
// stranded.
//
// The claim commits asynchronously: its tick row does not wait for a WAL
// flush. That is safe because nothing durable depends on a tick before an
// ack of its batch commits, and an ack's synchronous commit flushes the WAL
// up to and past the tick's commit record. A tick lost in a crash of
// Postgres only means its jobs, none of them acked, are claimed again.
func (s *Store) Claim(ctx context.Context, queue string, owner int32, req int64, retry bool, lim Limits) (*Batch, error) {
	var b pgx.Batch
	b.Queue(asyncCommit)
	b.Queue(claimSQL, queue, owner, req, retry, lim.MaxJobs, lim.MaxBytes)
	br := s.Pool.SendBatch(ctx, &b) // Close releases the connection
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var batch *Batch
	for rows.Next() {
		var tick, token int64
		var j Job
		if err := rows.Scan(&tick, &token, &j.ID, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt); err != nil {
			return nil, err
		}
		j.Queue = queue
		if batch == nil {
			batch = &Batch{Queue: queue, TickID: tick, Token: token}
		}
		batch.Jobs = append(batch.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return batch, br.Close()
}

// MaxErrorBytes caps the error text stored with an ack.
const MaxErrorBytes = 16 << 10

// CleanText makes s storable as Postgres text: invalid UTF-8 becomes U+FFFD,
// NUL bytes become the two characters `\0`, and the result is cut to at
// most MaxErrorBytes bytes on a character boundary.
func CleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", `\0`)
	}
	if len(s) > MaxErrorBytes {
		cut := MaxErrorBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// Flush writes acks and the batches they complete through millrace.flush,
// in one transaction, once per (owner, seq): replaying a flush whose reply
// was lost changes nothing. Batches re-leased since (released by the leader
// or adopted by another process) are fenced: their acks and done rows are
// dropped and their ticks returned.
//
// replay says this (owner, seq) may have been sent before (an earlier
// attempt lost its reply): the server then also skips each ack it already
// holds, which costs an index probe per ack that a first attempt need not
// pay.
func (s *Store) Flush(ctx context.Context, owner int32, seq int64, replay bool, acks []Ack, done []*Batch) (fenced []int64, err error) {
	if len(acks) == 0 && len(done) == 0 {
		return nil, nil
	}
	n := len(acks)
	var (
		jobIDs, ticks, tokens = make([]int64, n), make([]int64, n), make([]int64, n)
		states                = make([]int16, n)
		attempts, maxAtt      = make([]int32, n), make([]*int32, n)
		errs                  = make([]*string, n)
		retryAt, createdAt    = make([]*time.Time, n), make([]*time.Time, n)
		queues, kinds, args   = make([]*string, n), make([]*string, n), make([]*string, n)
		prios                 = make([]*int16, n)
	)
	for i, a := range acks {
		j := a.Job
		jobIDs[i], ticks[i], tokens[i], states[i] = j.ID, a.Batch.TickID, a.Batch.Token, a.State
		attempts[i] = int32(j.Attempt + 1)
		if a.Err != "" {
			e := CleanText(a.Err)
			errs[i] = &e
		}
		if a.State == AckCompleted {
			continue
		}
		if a.State == AckRetried {
			t := a.RetryAt
			retryAt[i] = &t
		}
		q, k, ar, p, m, c := j.Queue, j.Kind, string(j.Args), j.Priority, int32(j.MaxAttempts), j.CreatedAt
		queues[i], kinds[i], args[i], prios[i], maxAtt[i], createdAt[i] = &q, &k, &ar, &p, &m, &c
	}
	doneTicks, doneTokens, doneQueues := make([]int64, len(done)), make([]int64, len(done)), make([]string, len(done))
	for i, b := range done {
		doneTicks[i], doneTokens[i], doneQueues[i] = b.TickID, b.Token, b.Queue
	}
	rows, err := s.Pool.Query(ctx, `SELECT millrace.flush($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb[], $13, $14, $15, $16, $17, $18, $19)`,
		owner, seq, jobIDs, ticks, tokens, states, attempts, errs, retryAt, queues, kinds, args, prios, maxAtt, createdAt,
		doneTicks, doneTokens, doneQueues, replay)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// IsConnError reports whether err means the connection or server went away
// (as opposed to a statement the server rejected).
func IsConnError(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// admin shutdown, crash shutdown, cannot connect now
		return pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return true
}
