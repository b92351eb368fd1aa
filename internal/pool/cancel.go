// The cancel watcher: cancellation requests reaching running jobs.

package pool

import (
	"context"
	"errors"
	"time"
)

// errCancelRequested is the cause of a running job's context cancelled by
// millrace.cancel.
var errCancelRequested = errors.New("millrace: job cancelled by request")

// ErrCancelRequested is the context cause a job sees when it was cancelled
// from outside (context.Cause(ctx)).
var ErrCancelRequested = errCancelRequested

// CancelJob cancels the context of job id if it runs in this process (a
// cancellation request reached it); it reports whether it did.
func (p *Pool) CancelJob(id int64) bool {
	p.runMu.Lock()
	r := p.running[id]
	p.runMu.Unlock()
	if r == nil {
		return false
	}
	r.cancel(errCancelRequested)
	return true
}

// pollCancels checks, every CancelPoll while jobs run, whether any of them
// has a cancellation request: a notification can be missed (a reconnect).
func (p *Pool) pollCancels() {
	t := time.NewTicker(p.cfg.CancelPoll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-p.claimCtx.Done():
			return
		case <-t.C:
		}
		p.runMu.Lock()
		ids := make([]int64, 0, len(p.running))
		for id := range p.running {
			ids = append(ids, id)
		}
		p.runMu.Unlock()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(p.claimCtx, 5*time.Second)
		got, err := p.cfg.Store.Cancelled(ctx, ids)
		cancel()
		if err != nil {
			// Said once per outage: cancellations still come by
			// notification, and the next poll tries again.
			if !failing && p.claimCtx.Err() == nil {
				p.cfg.Logger.Warn("millrace: reading cancellation requests failed; retrying", "err", err)
			}
			failing = true
			continue
		}
		failing = false
		for _, id := range got {
			p.CancelJob(id)
		}
	}
}
