package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// TestOutcomePolicy: what each result of an attempt becomes: its ack's
// state and error, when it runs again, which attempt the backoff is asked
// about, and what OnFailure is told.
func TestOutcomePolicy(t *testing.T) {
	panicked := func() error {
		p := New(Config{Handle: func(ctx context.Context, run *Run) error { panic("boom") }})
		return p.call(context.Background(), &Run{})
	}()
	failed := errors.New("failed")
	type failure struct{ panicked, discarded bool }
	for _, tc := range []struct {
		name           string
		attempt        int // attempts made before this one (of 3)
		err, cause     error
		pol            KindPolicy
		state          int16
		errText        string        // the ack's error, or its prefix when it ends with "…"
		retryIn        time.Duration // RetryAt - now, for a retried or snoozed job
		backoffAttempt int           // the attempt the pool's backoff is asked about (0: not asked)
		failure        *failure      // what OnFailure is told (nil: nothing)
	}{
		{name: "nil completes", state: storage.AckCompleted},
		{name: "a panic retries, counting the attempt", err: panicked, state: storage.AckRetried, errText: "panic: boom\n…",
			retryIn: time.Minute, backoffAttempt: 1, failure: &failure{panicked: true}},
		{name: "a panic on the second attempt", attempt: 1, err: panicked, state: storage.AckRetried, errText: "panic: boom\n…",
			retryIn: 2 * time.Minute, backoffAttempt: 2, failure: &failure{panicked: true}},
		{name: "a panic on the last attempt discards", attempt: 2, err: panicked, state: storage.AckDiscarded, errText: "panic: boom\n…",
			failure: &failure{panicked: true, discarded: true}},
		{name: "an error retries after its kind's backoff", err: failed, pol: KindPolicy{Backoff: func(int) time.Duration { return time.Hour }},
			state: storage.AckRetried, errText: "failed", retryIn: time.Hour, failure: &failure{}},
		{name: "an error on the last attempt discards", attempt: 2, err: failed, state: storage.AckDiscarded, errText: "failed",
			failure: &failure{discarded: true}},
		{name: "a snooze runs it again, not counted", attempt: 2, err: &Snooze{Delay: time.Hour}, state: storage.AckSnoozed, retryIn: time.Hour},
		{name: "a wrapped snooze", err: fmt.Errorf("later: %w", &Snooze{Delay: time.Minute}), state: storage.AckSnoozed, retryIn: time.Minute},
		{name: "a negative snooze runs it now", err: &Snooze{Delay: -time.Hour}, state: storage.AckSnoozed},
		{name: "a cancel with a reason", err: &Cancel{Err: errors.New("obsolete")}, state: storage.AckCancelled, errText: "obsolete"},
		{name: "a cancel without one", err: &Cancel{}, state: storage.AckCancelled, errText: "cancelled by its worker"},
		{name: "any error after a cancellation request cancels", err: context.Canceled, cause: ErrCancelRequested,
			state: storage.AckCancelled, errText: context.Canceled.Error()},
		{name: "a discard with attempts left", err: &Discard{Err: errors.New("bad input")}, state: storage.AckDiscarded, errText: "bad input",
			failure: &failure{discarded: true}},
		{name: "a discard without a reason", err: &Discard{}, state: storage.AckDiscarded, errText: "discarded by its worker",
			failure: &failure{discarded: true}},
		{name: "an error after the timeout says so", err: context.Canceled, cause: ErrTimeout, state: storage.AckRetried,
			errText: "millrace: job timed out: context canceled", retryIn: time.Minute, backoffAttempt: 1, failure: &failure{}},
		{name: "the timeout's own error is not doubled", err: ErrTimeout, cause: ErrTimeout, state: storage.AckRetried,
			errText: "millrace: job timed out", retryIn: time.Minute, backoffAttempt: 1, failure: &failure{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked int
			var told []failure
			p := New(Config{Logger: quiet(),
				Backoff: func(attempt int) time.Duration { asked = attempt; return time.Duration(attempt) * time.Minute },
				OnFailure: func(job *storage.Job, err error, panicked, discarded bool, retryAt time.Time) {
					told = append(told, failure{panicked, discarded})
				}})
			it := leased(storage.Job{ID: 7, Kind: "k", Attempt: tc.attempt, MaxAttempts: 3})
			before := time.Now()
			a := p.outcome(&it, tc.err, tc.cause, tc.pol)
			after := time.Now()
			if a.State != tc.state {
				t.Errorf("state %d, want %d", a.State, tc.state)
			}
			if want, prefix := strings.CutSuffix(tc.errText, "…"); prefix && !strings.HasPrefix(a.Err, want) || !prefix && a.Err != want {
				t.Errorf("error %q, want %q", a.Err, tc.errText)
			}
			if a.Job != &it.job || a.Batch != it.batch.Batch {
				t.Errorf("the ack is not of the attempt's job and batch")
			}
			retried := tc.state == storage.AckRetried || tc.state == storage.AckSnoozed
			if retried && (a.RetryAt.Before(before.Add(tc.retryIn)) || a.RetryAt.After(after.Add(tc.retryIn))) {
				t.Errorf("runs again in %v, want %v", a.RetryAt.Sub(before), tc.retryIn)
			}
			if !retried && !a.RetryAt.IsZero() {
				t.Errorf("runs again at %v, want never", a.RetryAt)
			}
			if asked != tc.backoffAttempt {
				t.Errorf("the pool's backoff was asked about attempt %d, want %d", asked, tc.backoffAttempt)
			}
			switch {
			case tc.failure == nil && len(told) != 0:
				t.Errorf("OnFailure was told %+v, want nothing", told)
			case tc.failure != nil && (len(told) != 1 || told[0] != *tc.failure):
				t.Errorf("OnFailure was told %+v, want %+v", told, *tc.failure)
			}
		})
	}
}
