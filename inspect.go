package millrace

import (
	"context"
	"errors"
	"time"

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
//
// The reads of this file, on a pool, are sent again (at most twice) when
// the server ends them for a reason of its own, such as the cancel the
// leader sends a reader that keeps a slot of the ring from being
// reclaimed (docs/deploy.md); inside a transaction they fail at once.
func ReadStats(ctx context.Context, db DB) (Stats, error) {
	st, err := storage.Reread(ctx, db, func() (storage.RingStats, error) { return storage.Ring(ctx, db) })
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
	ID    int64
	Queue string
	Kind  string
	// Args are the job's arguments. History keeps a completed job
	// without them: Args of a completed job are nil, unless an earlier
	// attempt of it failed or snoozed (those keep theirs).
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
// few index probes. Its live row is read before its history (as the
// dashboard reads a job: storage.GetJob), so that a job that finishes in
// between is shown finished, never live beside its final attempt, nor
// lost.
func JobByID(ctx context.Context, db DB, id int64) (JobInfo, error) {
	j := JobInfo{ID: id}
	d, err := storage.Reread(ctx, db, func() (storage.JobDetail, error) { return storage.GetJob(ctx, db, id, storage.LiveByID) })
	if errors.Is(err, storage.ErrJobNotFound) {
		return j, ErrJobNotFound
	}
	if err != nil {
		return j, err
	}
	var final string
	for _, a := range d.Attempts {
		started := *a.FinishedAt
		if a.StartedAt != nil {
			started = *a.StartedAt
		}
		var owner int
		if a.Owner != nil {
			owner = *a.Owner
		}
		j.Attempts = append(j.Attempts, AttemptInfo{Attempt: a.Attempt, State: a.State, Started: started,
			Finished: *a.FinishedAt, Error: a.Error, Process: owner})
		j.setRow(a)
		if a.State != "snoozed" {
			j.Attempt = a.Attempt
		}
		if storage.IsFinal(a.State) {
			final = a.State
		}
	}
	switch {
	case d.Live != nil:
		// A live job: its current row.
		j.State = JobState(d.Live.State)
		j.setRow(*d.Live)
		j.Attempt = d.Live.Attempt
		if d.Live.RunAt != nil {
			j.RunAt = *d.Live.RunAt
		}
	case final != "":
		j.State = JobState(final)
	default:
		// Attempts that ran again, and no live row left to run: history
		// keeps what the ring has reclaimed.
		return JobInfo{ID: id}, ErrJobNotFound
	}
	return j, nil
}

// setRow takes the job's fields from one of its rows; a completed
// attempt's row has no args (history keeps none), and leaves those an
// earlier attempt's row gave.
func (j *JobInfo) setRow(r storage.JobRow) {
	j.Queue, j.Kind, j.Priority = r.Queue, r.Kind, r.Priority
	if r.Args != nil {
		j.Args = r.Args
	}
	j.MaxAttempts, j.CreatedAt = r.MaxAttempts, r.CreatedAt
}

// QueueCount is the number of jobs of one queue in each state.
type QueueCount struct {
	Queue     string
	Available int64
	Running   int64
	Scheduled int64
	Discarded int64 // in history
	Completed int64 // in history
	Cancelled int64 // in history
	Paused    bool
}

// QueueCounts returns, per queue, how many jobs are available, running,
// scheduled, and (while history keeps them) discarded, completed and
// cancelled, and whether the queue is paused. It reads every live job in
// every slot of the ring; finished jobs are not counted row by row but
// summed from the leader's tally of history (every 10 s) and the history
// written since. For people and dashboards, not for a worker's loop.
func QueueCounts(ctx context.Context, db DB) ([]QueueCount, error) {
	rows, err := storage.Reread(ctx, db, func() ([]storage.QueueRow, error) { return storage.Queues(ctx, db, false) })
	if err != nil {
		return nil, err
	}
	cs := make([]QueueCount, len(rows))
	for i, r := range rows {
		cs[i] = QueueCount{Queue: r.Name, Available: r.Available, Running: r.Running, Scheduled: r.Scheduled,
			Discarded: r.Discarded, Completed: r.Completed, Cancelled: r.Cancelled, Paused: r.Paused}
	}
	return cs, nil
}

// SchemaVersion returns the newest migration applied to the database, and
// the newest this library carries (they must be equal for a Client to
// start).
func SchemaVersion(ctx context.Context, db DB) (applied, latest int, err error) {
	applied, err = storage.SchemaVersion(ctx, db)
	return applied, schema.Latest(), err
}
