package millrace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/storage"
)

// CancelResult says what Cancel did.
type CancelResult string

// The results of Cancel.
const (
	Cancelled  CancelResult = "cancelled"  // it was waiting or scheduled: it never runs
	Cancelling CancelResult = "cancelling" // it was claimed: the process running it cancels its context
	Finished   CancelResult = "finished"   // it had already finished: nothing was done
	Unknown    CancelResult = "unknown"    // no such job (or it finished beyond history's retention)
)

// Cancel asks that job id never run again. A waiting job is finished as
// cancelled by the next claimer without running; a running job's context
// is cancelled (cause ErrCancelled) in whichever process runs it, within a
// second. The role needs millrace_admin's rights.
func Cancel(ctx context.Context, db DB, id int64) (CancelResult, error) {
	r, err := ops.Cancel(ctx, db, id)
	return CancelResult(r), err
}

// Retry queues a discarded or cancelled job to run again now, as a new job
// with the same kind, queue, arguments, priority and max attempts (the
// finished one stays in history as it ended), and returns the new job's
// id. It returns 0 and the reason ("not finished", "completed",
// "unknown") when there is nothing to retry. It is idempotent: a retry of
// a job already retried (one after the other or at once, from any
// process) returns the job that retry made and makes no other.
func Retry(ctx context.Context, db DB, id int64) (int64, string, error) {
	return ops.Retry(ctx, db, id)
}

// SetRetention sets how long history keeps completed jobs (at most 70h)
// and every other finished attempt (at most 31 days), for every process
// of the database; 0 keeps a value as it is. It returns the retention now.
// The role needs millrace_admin's rights (or to own the schema): the
// worker role expires history by this setting and cannot change it.
func SetRetention(ctx context.Context, db DB, completed, discarded time.Duration) (time.Duration, time.Duration, error) {
	if completed < 0 || discarded < 0 {
		return 0, 0, errors.New("millrace: retention must not be negative")
	}
	return storage.SetRetention(ctx, db, completed, discarded)
}

// Retention is how long history keeps completed jobs and every other
// finished attempt (DefaultCompletedRetention and DefaultDiscardedRetention
// until an administrator sets it).
func Retention(ctx context.Context, db DB) (completed, discarded time.Duration, err error) {
	return storage.Retention(ctx, db)
}

// PauseQueue stops every process from claiming jobs of queue, from its
// next claim on: its jobs stay, running ones finish, and storage keeps
// rotating. The role needs millrace_admin's rights.
func PauseQueue(ctx context.Context, db DB, queue string) error {
	return actionErr(ops.Pause(ctx, db, queue))
}

// ResumeQueue lets queue be claimed again and wakes its workers.
func ResumeQueue(ctx context.Context, db DB, queue string) error {
	return actionErr(ops.Resume(ctx, db, queue))
}

// QueuePaused says whether queue is paused.
func QueuePaused(ctx context.Context, db DB, queue string) (bool, error) {
	return ops.Paused(ctx, db, queue)
}

// MaxLimit is the largest concurrency limit a queue takes.
const MaxLimit = 1000000

// SetLimit sets how many jobs of queue may run at once across every
// process of the database (1 to MaxLimit; 0 clears the limit, and each
// process's MaxWorkers is the only bound). A job counts from its claim
// until its outcome is written, or until its process's lease runs out.
// It takes effect at each process's next claim, without a restart, and
// stays until changed; a limit below what runs now lets those jobs finish
// and starts no other until the queue is under it. The role needs
// millrace_worker's or millrace_admin's rights.
func SetLimit(ctx context.Context, db DB, queue string, running int) error {
	return actionErr(ops.SetLimit(ctx, db, queue, running))
}

// Limit is a queue's concurrency limit and what runs under it.
type Limit struct {
	Queue string
	// Running is the limit: jobs of the queue running at once across
	// every process.
	Running int
	// Held is what the live processes hold of the queue: jobs claimed
	// whose outcome is not yet written, as each process counted them at
	// its newest claim (never fewer than run).
	Held int64
}

// Limits lists the queues that have a concurrency limit, by name.
func Limits(ctx context.Context, db DB) ([]Limit, error) {
	ls, err := ops.Limits(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, len(ls))
	for i, l := range ls {
		out[i] = Limit{Queue: l.Queue, Running: l.Running, Held: l.Held}
	}
	return out, nil
}

// actionErr prefixes a failed action's error with the package's name.
func actionErr(err error) error {
	if err != nil {
		return fmt.Errorf("millrace: %w", err)
	}
	return nil
}

// Cancel is the package function Cancel on the client's pool.
func (c *Client) Cancel(ctx context.Context, id int64) (CancelResult, error) {
	return Cancel(ctx, c.db, id)
}

// PauseQueue is the package function PauseQueue on the client's pool.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return PauseQueue(ctx, c.db, queue)
}

// SetLimit is the package function SetLimit on the client's pool.
func (c *Client) SetLimit(ctx context.Context, queue string, running int) error {
	return SetLimit(ctx, c.db, queue, running)
}

// ResumeQueue is the package function ResumeQueue on the client's pool.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return ResumeQueue(ctx, c.db, queue)
}
