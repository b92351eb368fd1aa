// The outcome policy: what the result of an attempt becomes.

package pool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Snooze, returned by a handler, runs the job again after Delay without
// counting the attempt.
type Snooze struct{ Delay time.Duration }

func (e *Snooze) Error() string { return fmt.Sprintf("millrace: job snoozed for %s", e.Delay) }

// Cancel, returned by a handler, finishes the job as cancelled: it never
// runs again. Err says why (may be nil).
type Cancel struct{ Err error }

func (e *Cancel) Error() string {
	if e.Err == nil {
		return "millrace: job cancelled"
	}
	return "millrace: job cancelled: " + e.Err.Error()
}

func (e *Cancel) Unwrap() error { return e.Err }

// Discard, returned by a handler, finishes the job as discarded at once,
// whatever attempts it has left. Err says why (may be nil).
type Discard struct{ Err error }

func (e *Discard) Error() string {
	if e.Err == nil {
		return "millrace: job discarded"
	}
	return "millrace: job discarded: " + e.Err.Error()
}

func (e *Discard) Unwrap() error { return e.Err }

// DefaultBackoff waits 2^attempt seconds (capped at an hour) with ±20% jitter.
func DefaultBackoff(attempt int) time.Duration {
	d := time.Second << min(attempt, 12)
	if d > time.Hour {
		d = time.Hour
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// outcome decides what one attempt of a job leads to, in one place: the
// attempt is this run's number (1 for the first). nil completes the job;
// a *Snooze runs it again later without counting the attempt; a *Cancel,
// or any error after a cancellation request, cancels it; a *Discard
// discards it; any other error retries it after its kind's backoff, or
// discards it after its last attempt.
func (p *Pool) outcome(it *item, err error, cause error, pol KindPolicy) storage.Ack {
	a := storage.Ack{Batch: it.batch.Batch, Job: &it.job, State: storage.AckCompleted}
	if err == nil {
		return a
	}
	var (
		sn *Snooze
		cn *Cancel
		dc *Discard
	)
	switch {
	case errors.As(err, &sn):
		a.State = storage.AckSnoozed
		a.RetryAt = p.cfg.Now().Add(max(sn.Delay, 0))
		return a
	case errors.As(err, &cn):
		a.State = storage.AckCancelled
		a.Err = "cancelled by its worker"
		if cn.Err != nil {
			a.Err = cn.Err.Error()
		}
		return a
	case errors.Is(cause, errCancelRequested):
		a.State = storage.AckCancelled
		a.Err = err.Error()
		return a
	}
	attempt := it.job.Attempt + 1
	a.Err = err.Error()
	if errors.Is(cause, errTimeout) && !errors.Is(err, errTimeout) {
		a.Err = "millrace: job timed out: " + a.Err
	}
	backoff := p.cfg.Backoff
	if pol.Backoff != nil {
		backoff = pol.Backoff
	}
	if errors.As(err, &dc) || attempt >= it.job.MaxAttempts {
		a.State = storage.AckDiscarded
		if dc != nil {
			// The worker's own reason, as for JobCancel.
			a.Err = "discarded by its worker"
			if dc.Err != nil {
				a.Err = dc.Err.Error()
			}
		}
	} else {
		a.State = storage.AckRetried
		a.RetryAt = p.cfg.Now().Add(backoff(attempt))
	}
	var pe *panicError
	panicked := errors.As(err, &pe)
	discarded := a.State == storage.AckDiscarded
	p.logFailure(&it.job, err, panicked, discarded, a.RetryAt)
	if p.cfg.OnFailure != nil {
		p.cfg.OnFailure(&it.job, err, panicked, discarded, a.RetryAt)
	}
	return a
}

// failLogLimit is the most failed attempts logged per second; the rest are
// counted and reported in the next second's first line.
const failLogLimit = 10

// logFailure logs a failed attempt, rate-limited.
func (p *Pool) logFailure(j *storage.Job, err error, panicked, discarded bool, retryAt time.Time) {
	p.failMu.Lock()
	now := time.Now()
	if now.Sub(p.failWindow) >= time.Second {
		if p.failSuppressed > 0 {
			p.cfg.Logger.Warn("millrace: more failed attempts were not logged", "count", p.failSuppressed)
		}
		p.failWindow, p.failLogged, p.failSuppressed = now, 0, 0
	}
	if p.failLogged >= failLogLimit {
		p.failSuppressed++
		p.failMu.Unlock()
		return
	}
	p.failLogged++
	p.failMu.Unlock()
	msg := firstLine(err.Error())
	attrs := []any{"job", j.ID, "kind", j.Kind, "queue", j.Queue, "attempt", j.Attempt + 1, "max_attempts", j.MaxAttempts,
		"panic", panicked, "err", msg}
	if discarded {
		p.cfg.Logger.Error("millrace: job failed its last attempt and was discarded", attrs...)
	} else {
		p.cfg.Logger.Warn("millrace: job failed; retrying", append(attrs, "retry_in", time.Until(retryAt).Round(time.Millisecond))...)
	}
}

// firstLine is s up to its first newline (a panic's stack stays in the
// stored error).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
