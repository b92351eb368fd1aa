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
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

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

// JobState is where a job not yet finished stands.
type JobState string

// The states of a job that has not finished (see the millrace.jobs view).
const (
	JobAvailable JobState = "available" // committed, not yet claimed
	JobRunning   JobState = "running"   // in a claimed batch, no outcome yet
	JobScheduled JobState = "scheduled" // due later, or a retry waiting for its backoff
)

// JobInfo is a job as the millrace.jobs view shows it.
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
}

// ErrJobNotFound is returned by JobByID for a job that is not waiting or
// running: it finished (completed jobs are not kept; discarded ones are in
// millrace.discarded), or never existed.
var ErrJobNotFound = errors.New("millrace: job not found among jobs not yet finished")

// JobByID returns a job that has not finished yet. It reads every slot of
// the ring: use it to inspect, not on a hot path.
func JobByID(ctx context.Context, db DB, id int64) (JobInfo, error) {
	var j JobInfo
	var runAt *time.Time
	err := db.QueryRow(ctx, `SELECT id, queue, kind, args, priority, attempt, max_attempts, created_at, state, run_at
		FROM millrace.jobs WHERE id = $1 ORDER BY state = 'running' DESC LIMIT 1`, id).
		Scan(&j.ID, &j.Queue, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt, &j.State, &runAt)
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
	Discarded int64
}

// QueueCounts returns, per queue, how many jobs are available, running,
// scheduled and discarded. It reads every slot of the ring (cost grows
// with the jobs not yet finished): for dashboards at human cadence.
func QueueCounts(ctx context.Context, db DB) ([]QueueCount, error) {
	rows, err := db.Query(ctx, "SELECT queue, available, running, scheduled, discarded FROM millrace.queue_counts()")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueCount, error) {
		var c QueueCount
		err := r.Scan(&c.Queue, &c.Available, &c.Running, &c.Scheduled, &c.Discarded)
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
