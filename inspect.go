package millrace

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
)

// DB is what the read functions need: usually a *pgxpool.Pool. A *pgx.Conn
// or a pgx.Tx works too, but a transaction that has read the queue's
// tables holds a lock on all of them until it ends, and no slot of the ring
// can be reclaimed meanwhile: do not keep one open.
//
// It is the one interface every function of the queue takes a database
// as: QueryRow and Query, with pgx's signatures.
type DB = storage.Querier

// Stats describes the queue's storage ring. Every figure is derived from
// append-only ledgers; nothing is counted in a row.
type Stats struct {
	// CurrentSlot is the slot of the ring producers write into now, and
	// CurrentSince when it became current.
	CurrentSlot  int
	CurrentSince time.Time
	// Rotations and Reclaims count, since install, the times a new slot
	// became current and the times a slot was emptied by TRUNCATE.
	Rotations int64
	Reclaims  int64
	// LastReclaim is when a slot was last emptied.
	LastReclaim time.Time
}

// ReadStats reads the state of the storage ring.
func ReadStats(ctx context.Context, db DB) (Stats, error) {
	st, err := storage.Ring(ctx, db)
	if err != nil {
		return Stats{}, err
	}
	return Stats{CurrentSlot: int(st.Current), CurrentSince: st.Since, Rotations: st.Rotations,
		Reclaims: st.Reclaims, LastReclaim: st.LastReclaim}, nil
}

// JobState is where a job stands.
type JobState string

// The states of a job.
const (
	JobAvailable JobState = "available" // committed, not yet claimed
	JobRunning   JobState = "running"   // in a claimed batch, no outcome yet
	JobScheduled JobState = "scheduled" // due later, or waiting for a retry or a snooze
	JobCompleted JobState = "completed" // finished: succeeded
	JobDiscarded JobState = "discarded" // finished: failed its last attempt, or discarded by its worker
	JobCancelled JobState = "cancelled" // finished: cancelled
)

// JobInfo is a job and its history.
type JobInfo struct {
	ID          int64
	Queue       string
	Kind        string
	Args        []byte
	Priority    int
	Attempt     int // attempts made so far
	MaxAttempts int
	CreatedAt   time.Time
	State       JobState
	RunAt       time.Time // for scheduled jobs
	// Attempts are its finished attempts, oldest first, while history
	// keeps them (Config.CompletedRetention, Config.DiscardedRetention).
	Attempts []AttemptInfo
}

// AttemptInfo is one finished attempt of a job.
type AttemptInfo struct {
	Attempt  int
	State    string // completed, failed, snoozed, cancelled, discarded
	Started  time.Time
	Finished time.Time
	Error    string
	Process  int // the process identity that ran it
}

// ErrJobNotFound is returned by JobByID for a job that never existed, or
// finished longer ago than history keeps.
var ErrJobNotFound = errors.New("millrace: job not found")

// JobByID returns a job, live or finished, with its attempts. It costs a
// few index probes.
func JobByID(ctx context.Context, db DB, id int64) (JobInfo, error) {
	j := JobInfo{ID: id}
	var state *string
	if err := db.QueryRow(ctx, "SELECT millrace.job_state($1)", id).Scan(&state); err != nil {
		return j, err
	}
	if state == nil {
		return j, ErrJobNotFound
	}
	j.State = JobState(*state)
	rows, err := db.Query(ctx, `SELECT attempt, state, queue, kind, args, priority, max_attempts, created_at,
		coalesce(started_at, finished_at), finished_at, coalesce(error, ''), owner
		FROM millrace.history WHERE id = $1 ORDER BY finished_at, attempt`, id)
	if err != nil {
		return j, err
	}
	for rows.Next() {
		var a AttemptInfo
		if err := rows.Scan(&a.Attempt, &a.State, &j.Queue, &j.Kind, &j.Args, &j.Priority, &j.MaxAttempts, &j.CreatedAt,
			&a.Started, &a.Finished, &a.Error, &a.Process); err != nil {
			rows.Close()
			return j, err
		}
		j.Attempts = append(j.Attempts, a)
		if a.State != "snoozed" {
			j.Attempt = a.Attempt
		}
	}
	if err := rows.Err(); err != nil {
		return j, err
	}
	switch j.State {
	case JobCompleted, JobDiscarded, JobCancelled:
		return j, nil
	}
	// A live job: its current row.
	var runAt *time.Time
	err = db.QueryRow(ctx, `SELECT queue, kind, args, priority, attempt, max_attempts, created_at, run_at
		FROM millrace.live_job($1)`, id).
		Scan(&j.Queue, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt, &runAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, ErrJobNotFound
	}
	if runAt != nil {
		j.RunAt = *runAt
	}
	return j, err
}

// QueueCount is the number of jobs of one queue in each state.
type QueueCount struct {
	Queue     string
	Available int64
	Running   int64
	Scheduled int64
	Discarded int64 // in history
	Completed int64 // in history
	Paused    bool
}

// QueueCounts returns, per queue, how many jobs are available, running,
// scheduled, and (while history keeps them) discarded and completed, and
// whether the queue is paused. It reads every live job in every slot of
// the ring; completed and discarded jobs are not counted row by row but
// summed from the leader's tally of history (every 10 s) and the history
// written since. For people and dashboards, not for a worker's loop.
func QueueCounts(ctx context.Context, db DB) ([]QueueCount, error) {
	rows, err := db.Query(ctx, "SELECT queue, available, running, scheduled, discarded, completed, paused FROM millrace.queue_counts()")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueCount, error) {
		var c QueueCount
		err := r.Scan(&c.Queue, &c.Available, &c.Running, &c.Scheduled, &c.Discarded, &c.Completed, &c.Paused)
		return c, err
	})
}

// SchemaVersion returns the newest migration applied to the database, and
// the newest this library carries (they must be equal for a Client to
// start).
func SchemaVersion(ctx context.Context, db DB) (applied, latest int, err error) {
	err = db.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM millrace.migration").Scan(&applied)
	return applied, schema.Latest(), err
}
