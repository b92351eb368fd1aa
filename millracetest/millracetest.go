// Package millracetest helps application authors test code that uses
// millrace, against a real database and without one:
//
//   - RequireInserted, RequireNotInserted and RequireInsertedMany assert
//     what a transaction enqueued, before it commits (or after it rolled
//     nothing back: call them inside the transaction).
//   - Work runs a worker's job in a unit test, without a client or a
//     database; millrace.IsSnooze, millrace.IsCancel and millrace.IsDiscard
//     say which outcome a returned error asks for.
//
// The Require functions read the schema's job and schedule tables, so the
// role the test connects as must be able to read them: the schema's owner
// (the role that ran the migrations) or a member of millrace_admin.
// Producers running as millrace_producer cannot.
package millracetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/storage"
)

// Inserted is a job a transaction inserted, its arguments still encoded.
type Inserted struct {
	ID          int64
	Queue       string
	Kind        string
	Priority    int
	MaxAttempts int
	// Timeout is the job's own timeout (0: its kind's).
	Timeout   time.Duration
	CreatedAt time.Time
	// Scheduled says the job is due later, at RunAt; otherwise it was
	// available at once and RunAt is zero.
	Scheduled bool
	RunAt     time.Time
	// EncodedArgs are the job's arguments as stored.
	EncodedArgs json.RawMessage
}

// InsertedJob is a job a transaction inserted, with its arguments decoded.
type InsertedJob[T millrace.JobArgs] struct {
	Inserted
	Args T
}

// RequireOpts narrow which jobs of a kind match; nil or zero fields match
// any job.
type RequireOpts[T millrace.JobArgs] struct {
	// Queue, if set, is the queue the job must be in.
	Queue string
	// Priority, if set, is the priority the job must have (0 is a
	// priority: write new(0) to require it).
	Priority *int
	// MaxAttempts, if set, is the job's required maximum of attempts.
	MaxAttempts int
	// Args, if set, must return true for the job's arguments.
	Args func(args T) bool
}

// ExpectedJob is one job RequireInsertedMany expects, in order.
type ExpectedJob struct {
	Kind        string
	Queue       string // if set
	Priority    *int   // if set
	MaxAttempts int    // if set
}

// inserted reads the jobs the transaction tx inserted, in the order it
// inserted them (storage.TxJobs).
func inserted(ctx context.Context, tx millrace.DB) ([]Inserted, error) {
	rows, err := storage.TxJobs(ctx, tx)
	if err != nil {
		return nil, err
	}
	var out []Inserted
	for _, r := range rows {
		j := Inserted{ID: r.ID, Queue: r.Queue, Kind: r.Kind, Priority: int(r.Priority), MaxAttempts: r.MaxAttempts,
			Timeout: r.Timeout, CreatedAt: r.CreatedAt, EncodedArgs: r.Args}
		if r.RunAt != nil {
			j.Scheduled, j.RunAt = true, *r.RunAt
		}
		out = append(out, j)
	}
	return out, nil
}

// describe lists jobs for a failure message.
func describe(jobs []Inserted) string {
	if len(jobs) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, j := range jobs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (id %d, queue %s, priority %d, max attempts %d)", j.Kind, j.ID, j.Queue, j.Priority, j.MaxAttempts)
	}
	return b.String()
}

// matches says whether j fits opts; if not, why.
func matches[T millrace.JobArgs](j Inserted, opts *RequireOpts[T]) (*InsertedJob[T], string, error) {
	out := &InsertedJob[T]{Inserted: j}
	if err := json.Unmarshal(j.EncodedArgs, &out.Args); err != nil {
		return nil, "", fmt.Errorf("decoding args of job %d: %w", j.ID, err)
	}
	if opts == nil {
		return out, "", nil
	}
	switch {
	case opts.Queue != "" && j.Queue != opts.Queue:
		return nil, fmt.Sprintf("queue %s, want %s", j.Queue, opts.Queue), nil
	case opts.Priority != nil && j.Priority != *opts.Priority:
		return nil, fmt.Sprintf("priority %d, want %d", j.Priority, *opts.Priority), nil
	case opts.MaxAttempts != 0 && j.MaxAttempts != opts.MaxAttempts:
		return nil, fmt.Sprintf("max attempts %d, want %d", j.MaxAttempts, opts.MaxAttempts), nil
	case opts.Args != nil && !opts.Args(out.Args):
		return nil, fmt.Sprintf("args %s do not match", j.EncodedArgs), nil
	}
	return out, "", nil
}

// RequireInserted asserts that transaction tx inserted exactly one job of
// T's kind matching opts (nil: any), and returns it. It must be called
// inside tx (a pgx.Tx, or a connection with a transaction open): it finds
// the jobs by tx's transaction id. Duplicates of unique jobs are not
// inserted and not found. On failure it calls t.Fatalf, naming every job
// tx inserted.
func RequireInserted[T millrace.JobArgs](ctx context.Context, t testing.TB, tx millrace.DB, opts *RequireOpts[T]) *InsertedJob[T] {
	t.Helper()
	var zero T
	kind := zero.Kind()
	all, err := inserted(ctx, tx)
	if err != nil {
		t.Fatalf("millracetest: reading inserted jobs: %v", err)
		return nil
	}
	var found []*InsertedJob[T]
	var why []string
	for _, j := range all {
		if j.Kind != kind {
			continue
		}
		m, reason, err := matches(j, opts)
		if err != nil {
			t.Fatalf("millracetest: %v", err)
			return nil
		}
		if m == nil {
			why = append(why, fmt.Sprintf("job %d: %s", j.ID, reason))
			continue
		}
		found = append(found, m)
	}
	switch len(found) {
	case 1:
		return found[0]
	case 0:
		msg := fmt.Sprintf("millracetest: no job of kind %s was inserted in this transaction", kind)
		if len(why) > 0 {
			msg = fmt.Sprintf("millracetest: no job of kind %s matching the options was inserted in this transaction (%s)",
				kind, strings.Join(why, "; "))
		}
		t.Fatalf("%s; inserted: %s", msg, describe(all))
	default:
		t.Fatalf("millracetest: %d jobs of kind %s match, want 1; inserted: %s", len(found), kind, describe(all))
	}
	return nil
}

// RequireNotInserted asserts that transaction tx inserted no job of T's
// kind matching opts (nil: any). Like RequireInserted, call it inside tx.
func RequireNotInserted[T millrace.JobArgs](ctx context.Context, t testing.TB, tx millrace.DB, opts *RequireOpts[T]) {
	t.Helper()
	var zero T
	kind := zero.Kind()
	all, err := inserted(ctx, tx)
	if err != nil {
		t.Fatalf("millracetest: reading inserted jobs: %v", err)
		return
	}
	for _, j := range all {
		if j.Kind != kind {
			continue
		}
		m, _, err := matches(j, opts)
		if err != nil {
			t.Fatalf("millracetest: %v", err)
			return
		}
		if m != nil {
			t.Fatalf("millracetest: a job of kind %s was inserted in this transaction (id %d, queue %s, priority %d, args %s), want none",
				kind, j.ID, j.Queue, j.Priority, j.EncodedArgs)
			return
		}
	}
}

// RequireInsertedMany asserts that transaction tx inserted exactly the
// expected jobs, no more, in this order, and returns them. Like
// RequireInserted, call it inside tx.
func RequireInsertedMany(ctx context.Context, t testing.TB, tx millrace.DB, expected []ExpectedJob) []Inserted {
	t.Helper()
	all, err := inserted(ctx, tx)
	if err != nil {
		t.Fatalf("millracetest: reading inserted jobs: %v", err)
		return nil
	}
	if len(all) != len(expected) {
		t.Fatalf("millracetest: %d jobs inserted in this transaction, want %d; inserted: %s", len(all), len(expected), describe(all))
		return nil
	}
	for i, e := range expected {
		j := all[i]
		var bad string
		switch {
		case j.Kind != e.Kind:
			bad = fmt.Sprintf("kind %s, want %s", j.Kind, e.Kind)
		case e.Queue != "" && j.Queue != e.Queue:
			bad = fmt.Sprintf("queue %s, want %s", j.Queue, e.Queue)
		case e.Priority != nil && j.Priority != *e.Priority:
			bad = fmt.Sprintf("priority %d, want %d", j.Priority, *e.Priority)
		case e.MaxAttempts != 0 && j.MaxAttempts != e.MaxAttempts:
			bad = fmt.Sprintf("max attempts %d, want %d", j.MaxAttempts, e.MaxAttempts)
		}
		if bad != "" {
			t.Fatalf("millracetest: job %d of %d inserted in this transaction has %s; inserted: %s", i+1, len(all), bad, describe(all))
			return nil
		}
	}
	return all
}
