// Package storage is the Go side of the millrace storage protocol: enqueue,
// claim of a batch by snapshot tick, per-job acks flushed in bulk with
// fencing, and the maintenance steps (rotation, rescue, promotion) that are
// the only writers allowed to run at maintenance cadence. See
// docs/architecture.md for the invariants each statement keeps.
package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Segments is the number of rotating segments of every growing table.
const Segments = 3

// LockSpace is the first key of millrace's two-int advisory locks
// (millrace.lock_space() in SQL). Second keys: 0 the leader, a process id for
// process liveness; batch fencing uses FenceSpace.
const LockSpace = 1836412274

// FenceSpace is the first key of the per-batch fencing locks: rescue takes
// (FenceSpace, tick) exclusively, an ack flush takes it shared.
const FenceSpace = 1836412275

// Ack states, as stored in ack_N.state.
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

// Batch is a claimed tick: the jobs of one queue that committed between two
// snapshots, leased to one process under a fencing token.
type Batch struct {
	Queue  string
	TickID int64
	Seg    int16 // segment holding the tick, its acks and its done row
	Token  int64 // fencing token: TickID for the first lease, higher for rescues
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

// Store runs the protocol's statements on a pool.
type Store struct {
	Pool *pgxpool.Pool
}

// ErrFenced is reported for acks of a batch that another process has
// re-claimed since: they are dropped, the newer lease decides.
var ErrFenced = errors.New("storage: batch lease was taken over (fenced)")

// Enqueue inserts one job and commits it. notify asks Postgres for a NOTIFY
// in the same transaction (the client usually passes false and coalesces its
// own notifications).
func (s *Store) Enqueue(ctx context.Context, q Querier, j NewJob, notify bool) (int64, error) {
	var runAt any
	if !j.RunAt.IsZero() {
		runAt = j.RunAt
	}
	var id int64
	err := q.QueryRow(ctx, "SELECT millrace.enqueue($1, $2::jsonb, $3, $4::smallint, $5, $6, $7)",
		j.Kind, string(j.Args), j.Queue, j.Priority, runAt, j.MaxAttempts, notify).Scan(&id)
	return id, err
}

// Querier is what Enqueue needs: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// CurrentSegment reads the newest rotation row.
func CurrentSegment(ctx context.Context, q Querier) (int16, error) {
	var seg int16
	err := q.QueryRow(ctx, "SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1").Scan(&seg)
	return seg, err
}

// EnqueueMany inserts jobs with COPY inside tx (the caller commits), jobs
// due now into the current job segment and later ones into its schedule.
// It sends one NOTIFY per queue for the whole batch.
func EnqueueMany(ctx context.Context, tx pgx.Tx, jobs []NewJob) (int64, error) {
	seg, err := CurrentSegment(ctx, tx)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	var due, later [][]any
	queues := map[string]bool{}
	for _, j := range jobs {
		if j.RunAt.After(now) {
			later = append(later, []any{j.Queue, j.Kind, string(j.Args), j.Priority, 0, j.MaxAttempts, now, j.RunAt})
			continue
		}
		due = append(due, []any{j.Queue, j.Kind, string(j.Args), j.Priority, j.MaxAttempts})
		queues[j.Queue] = true
	}
	var n int64
	if len(due) > 0 {
		c, err := tx.CopyFrom(ctx, pgx.Identifier{"millrace", fmt.Sprintf("job_%d", seg)},
			[]string{"queue", "kind", "args", "priority", "max_attempts"}, pgx.CopyFromRows(due))
		if err != nil {
			return 0, err
		}
		n += c
	}
	if len(later) > 0 {
		// sched rows need an id from the job sequence; COPY cannot call
		// nextval per row through a default here, so insert with unnest.
		cols := make([][]any, 8)
		for _, r := range later {
			for i := range cols {
				cols[i] = append(cols[i], r[i])
			}
		}
		tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO millrace.sched_%d (id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
			SELECT nextval('millrace.job_id_seq'), q, k, a::jsonb, p, 0, m, c, d
			FROM unnest($1::text[], $2::text[], $3::text[], $4::smallint[], $5::int[], $6::timestamptz[], $7::timestamptz[]) AS u(q, k, a, p, m, c, d)`, seg),
			cols[0], cols[1], cols[2], cols[3], cols[5], cols[6], cols[7])
		if err != nil {
			return 0, err
		}
		n += tag.RowsAffected()
	}
	for q := range queues {
		if _, err := tx.Exec(ctx, "SELECT pg_notify('millrace', $1)", q); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Claim sends claimSQL behind asyncCommit in one pgx batch, which Postgres
// runs as one implicit transaction: the claim's commit does not wait for its
// WAL to reach disk.
const (
	asyncCommit = "SELECT set_config('synchronous_commit', 'off', true)"
	claimSQL    = "SELECT tick_id, tick_seg, id, kind, args, priority, attempt, max_attempts, created_at FROM millrace.claim($1, $2)"
)

// Claim takes the next batch of queue for process owner. It returns nil when
// nothing new has committed since the queue's previous tick.
//
// The claim commits asynchronously: its tick row does not wait for a WAL
// flush. That is safe because nothing durable depends on a tick before an
// ack of its batch commits, and an ack's synchronous commit flushes the WAL
// up to and past the tick's commit record. A tick lost in a crash of
// Postgres only means its jobs, none of them acked, are claimed again.
func (s *Store) Claim(ctx context.Context, queue string, owner int32) (*Batch, error) {
	var b pgx.Batch
	b.Queue(asyncCommit)
	b.Queue(claimSQL, queue, owner)
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
		var tick int64
		var seg int16
		var j Job
		if err := rows.Scan(&tick, &seg, &j.ID, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt); err != nil {
			return nil, err
		}
		j.Queue = queue
		if batch == nil {
			batch = &Batch{Queue: queue, TickID: tick, Seg: seg, Token: tick}
		}
		batch.Jobs = append(batch.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return batch, br.Close()
}

// Flush writes acks and done records in one transaction: COPY of the acks
// into their batches' segments, retries into the current schedule segment,
// discarded jobs into millrace.discarded, then one done row per finished
// batch. Batches re-claimed by another process since their lease are fenced:
// their acks and done rows are dropped and reported in the returned set.
func (s *Store) Flush(ctx context.Context, acks []Ack, done []*Batch) (fenced map[int64]bool, err error) {
	if len(acks) == 0 && len(done) == 0 {
		return nil, nil
	}
	tokens := map[int64]int64{}
	for _, a := range acks {
		tokens[a.Batch.TickID] = a.Batch.Token
	}
	for _, b := range done {
		tokens[b.TickID] = b.Token
	}
	ticks := make([]int64, 0, len(tokens))
	for t := range tokens {
		ticks = append(ticks, t)
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// Fencing: hold each batch's fence lock shared while checking that
		// no newer lease exists; a rescue takes it exclusively.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock_shared($1, (t % 2147483647)::int) FROM unnest($2::bigint[]) t", FenceSpace, ticks); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT tick_id, max(token) FROM (
			SELECT tick_id, token FROM millrace.claim_0 WHERE tick_id = ANY($1)
			UNION ALL SELECT tick_id, token FROM millrace.claim_1 WHERE tick_id = ANY($1)
			UNION ALL SELECT tick_id, token FROM millrace.claim_2 WHERE tick_id = ANY($1)) c GROUP BY tick_id`, ticks)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t, tok int64
			if err := rows.Scan(&t, &tok); err != nil {
				return err
			}
			if tok > tokens[t] {
				if fenced == nil {
					fenced = map[int64]bool{}
				}
				fenced[t] = true
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var bySeg [Segments][][]any
		var retries []Ack
		var discards []Ack
		for _, a := range acks {
			if fenced[a.Batch.TickID] {
				continue
			}
			var errText any
			if a.Err != "" {
				errText = a.Err
			}
			bySeg[a.Batch.Seg] = append(bySeg[a.Batch.Seg], []any{a.Job.ID, a.Batch.TickID, a.Batch.Token, a.State, a.Job.Attempt + 1, errText})
			switch a.State {
			case AckRetried:
				retries = append(retries, a)
			case AckDiscarded:
				discards = append(discards, a)
			}
		}
		for seg, rows := range bySeg {
			if len(rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"millrace", fmt.Sprintf("ack_%d", seg)},
				[]string{"job_id", "tick_id", "token", "state", "attempt", "error"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		if len(retries) > 0 {
			seg, err := CurrentSegment(ctx, tx)
			if err != nil {
				return err
			}
			rows := make([][]any, len(retries))
			for i, a := range retries {
				j := a.Job
				rows[i] = []any{j.ID, j.Queue, j.Kind, string(j.Args), j.Priority, j.Attempt + 1, j.MaxAttempts, j.CreatedAt, a.RetryAt, a.Err}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"millrace", fmt.Sprintf("sched_%d", seg)},
				[]string{"id", "queue", "kind", "args", "priority", "attempt", "max_attempts", "created_at", "due_at", "last_error"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		if len(discards) > 0 {
			rows := make([][]any, len(discards))
			for i, a := range discards {
				j := a.Job
				rows[i] = []any{j.ID, j.Queue, j.Kind, string(j.Args), j.Priority, j.Attempt + 1, j.MaxAttempts, j.CreatedAt, a.Err}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"millrace", "discarded"},
				[]string{"id", "queue", "kind", "args", "priority", "attempt", "max_attempts", "created_at", "error"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		var doneSeg [Segments][][]any
		for _, b := range done {
			if fenced[b.TickID] {
				continue
			}
			doneSeg[b.Seg] = append(doneSeg[b.Seg], []any{b.Queue, b.TickID})
		}
		for seg, rows := range doneSeg {
			if len(rows) == 0 {
				continue
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"millrace", fmt.Sprintf("done_%d", seg)},
				[]string{"queue", "tick_id"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		return nil
	})
	return fenced, err
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
