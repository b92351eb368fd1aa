package millrace

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// MaxLimit is the largest running limit, and the most starts per period,
// a queue takes.
const MaxLimit = 1000000

// Limit is a queue's limits across every process of the database; 0
// leaves one out.
type Limit struct {
	// Running is how many of the queue's jobs may run at once (1 to
	// MaxLimit). A job counts from its claim until it ends in the process
	// that runs it, or until that process's lease runs out.
	Running int
	// Rate is how many of the queue's jobs may start per Per (1 to
	// MaxLimit per 10ms to 24h), counted at their claims on the
	// database's clock over a window of Per and a tenth of it (at most a
	// second more): the time a job takes from its claim to its start in
	// a process, so that starts measured there keep to the rate too.
	Rate int
	Per  time.Duration
	// PerKey is how many of the queue's jobs of one key may run at once
	// across every process (1 to MaxLimit), counted as Running is. A
	// claim defers the jobs of a key at its limit to the schedule
	// (JobState says "scheduled"), paced at one per slot of the key for
	// each time a job of the queue takes in the claiming process (its
	// mean, measured there), so that the jobs of other keys behind them
	// start without waiting for them.
	PerKey int
	// Key is the parts of a job's key under PerKey, joined by "/": "kind"
	// for its kind, "args.F" (or F) for its top-level args field F as
	// text (a missing field is ""). nil: the kind.
	Key []string
	// KeyRate is how many of the queue's jobs of one key (Key) may start
	// per KeyPer (1 to MaxLimit per 10ms to 24h), counted as Rate is. A
	// claim defers the jobs of a key past its rate to the schedule, a
	// rate's worth every window after the key's deferred jobs, so that a
	// backlog of one key holds no other key back.
	KeyRate int
	KeyPer  time.Duration
}

// keyParts is key as the database keeps it: each part "kind" or
// "args.F", nil without a per-key limit, ["kind"] for none given.
func (l Limit) keyParts() []string {
	if l.PerKey == 0 && l.KeyRate == 0 {
		return nil
	}
	if len(l.Key) == 0 {
		return []string{"kind"}
	}
	out := make([]string, len(l.Key))
	for i, k := range l.Key {
		if k != "kind" && !strings.HasPrefix(k, "args.") {
			k = "args." + k
		}
		out[i] = k
	}
	return out
}

// check says what is wrong with l, if anything (nil: no limit given).
func (l *Limit) check() error {
	switch {
	case l == nil:
		return nil
	case l.Running < 0 || l.Running > MaxLimit:
		return fmt.Errorf("the running limit must be 0 (none) to %d, not %d", MaxLimit, l.Running)
	case (l.Rate == 0) != (l.Per == 0):
		return errors.New("a rate limit needs both Rate and Per (or neither)")
	case l.Rate < 0 || l.Rate > MaxLimit || l.Rate > 0 && (l.Per < 10*time.Millisecond || l.Per > 24*time.Hour):
		return fmt.Errorf("a rate limit must be 1 to %d starts per 10ms to 24h, not %d per %s", MaxLimit, l.Rate, l.Per)
	case l.PerKey < 0 || l.PerKey > MaxLimit:
		return fmt.Errorf("the per-key limit must be 0 (none) to %d, not %d", MaxLimit, l.PerKey)
	case (l.KeyRate == 0) != (l.KeyPer == 0):
		return errors.New("a per-key rate needs both KeyRate and KeyPer (or neither)")
	case l.KeyRate < 0 || l.KeyRate > MaxLimit || l.KeyRate > 0 && (l.KeyPer < 10*time.Millisecond || l.KeyPer > 24*time.Hour):
		return fmt.Errorf("a per-key rate must be 1 to %d starts per 10ms to 24h, not %d per %s", MaxLimit, l.KeyRate, l.KeyPer)
	case l.PerKey == 0 && l.KeyRate == 0 && len(l.Key) > 0:
		return errors.New("a Key needs a PerKey limit or a KeyRate")
	case len(l.Key) > 8:
		return fmt.Errorf("a key has at most 8 parts, not %d", len(l.Key))
	}
	for _, k := range l.Key {
		if f := strings.TrimPrefix(k, "args."); k == "" || f == "" || len(f) > 63 {
			return fmt.Errorf("a key part is kind or a top-level args field name of 1 to 63 bytes, not %q", k)
		}
	}
	return nil
}

// SetLimit replaces queue's limits (the zero Limit clears them: each
// process's MaxWorkers is then the only bound). They take effect at each
// process's next claim, without a restart, and stay until changed; a
// running limit below what runs now lets those jobs finish and starts no
// other until the queue is under it. The role needs millrace_worker's or
// millrace_admin's rights.
func SetLimit(ctx context.Context, db DB, queue string, l Limit) error {
	if err := l.check(); err != nil {
		return fmt.Errorf("millrace: %w", err)
	}
	return actionErr(ops.SetLimit(ctx, db, queue, l.storage()))
}

// storage is l as the storage package takes it, its key normalized.
func (l Limit) storage() storage.Limit {
	return storage.Limit{Running: l.Running, Rate: l.Rate, Per: l.Per, PerKey: l.PerKey, Key: l.keyParts(), KeyRate: l.KeyRate, KeyPer: l.KeyPer}
}

// QueueLimit is a queue's limits and what runs under them.
type QueueLimit struct {
	Queue string
	Limit Limit
	// Held is, under a running limit, the slots the live processes hold
	// of it, as each one's newest claim wrote them: each runs at most its
	// slots at once, so never fewer than run, and at most the limit.
	Held int64
	// Started is, under a rate limit, how many jobs the claims of the
	// current window took.
	Started int64
	// KeysRunning and KeysFull are, under a per-key limit, how many keys
	// have a slot held by a live process and how many are at the limit;
	// Deferred is how many of the queue's jobs the limit deferred wait in
	// the schedule.
	KeysRunning, KeysFull, Deferred int64
}

// Limits lists the queues that have a limit, by name.
func Limits(ctx context.Context, db DB) ([]QueueLimit, error) {
	ls, err := ops.Limits(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]QueueLimit, len(ls))
	for i, l := range ls {
		out[i] = QueueLimit{Queue: l.Queue, Limit: Limit(l.Limit), Held: l.Held, Started: l.Started,
			KeysRunning: l.KeysRunning, KeysFull: l.KeysFull, Deferred: l.Deferred}
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
func (c *Client) SetLimit(ctx context.Context, queue string, l Limit) error {
	return SetLimit(ctx, c.db, queue, l)
}

// ResumeQueue is the package function ResumeQueue on the client's pool.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return ResumeQueue(ctx, c.db, queue)
}
