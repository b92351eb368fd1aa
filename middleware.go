package millrace

import (
	"context"
	"encoding/json"
	"time"
)

// JobMeta is a job as WorkMiddleware sees it.
type JobMeta struct {
	ID          int64
	Queue       string
	Kind        string
	Priority    int
	Attempt     int // 1 for the first run
	MaxAttempts int
	CreatedAt   time.Time
	ReadyAt     time.Time
	Args        json.RawMessage
}

// WorkMiddleware wraps one attempt of a job: call next to run it, and
// return its error (or another).
type WorkMiddleware func(ctx context.Context, job *JobMeta, next func(ctx context.Context) error) error

// wrapWork puts the work middleware around h.
func (c *Client) wrapWork(h func(context.Context, *poolRun) error) func(context.Context, *poolRun) error {
	if len(c.cfg.WorkMiddleware) == 0 {
		return h
	}
	return func(ctx context.Context, run *poolRun) error {
		j := run.Job
		meta := &JobMeta{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Priority: int(j.Priority), Attempt: j.Attempt + 1,
			MaxAttempts: j.MaxAttempts, CreatedAt: j.CreatedAt, ReadyAt: j.ReadyAt, Args: j.Args}
		next := func(ctx context.Context) error { return h(ctx, run) }
		for i := len(c.cfg.WorkMiddleware) - 1; i >= 0; i-- {
			mw, inner := c.cfg.WorkMiddleware[i], next
			next = func(ctx context.Context) error { return mw(ctx, meta, inner) }
		}
		return next(ctx)
	}
}
