package maint

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/millrace/millrace/internal/storage"
)

// rescue is a round's release of the batches whose holder is dead (its
// process lease ran out) or stuck (a lease older than StuckAfter) to any
// claimer of their queue; the jobs the holder was running are charged an
// attempt. A batch a transaction completing one of its jobs (CompleteTx)
// holds is not released: the round does not wait for it, and says so
// once per LogEvery.
func (m *Maintainer) rescue(ctx context.Context, _ *round) error {
	cfg := &m.cfg
	released, err := cfg.Store.Rescue(ctx, cfg.Term, cfg.StuckAfter)
	for _, r := range released {
		if r.Reason == storage.ReleaseHeld {
			if m.logEvery("held" + strconv.FormatInt(r.TickID, 10)) {
				cfg.Logger.Warn("millrace: a batch cannot be released while a transaction completing one of its jobs (CompleteTx) is open; it is tried again at each round",
					"queue", r.Queue, "tick", r.TickID, "holder", r.Owner)
			}
			continue
		}
		lvl := slog.LevelInfo
		if r.Reason == storage.ReleaseStuck || r.Charged > 0 {
			lvl = slog.LevelWarn
		}
		cfg.Logger.Log(ctx, lvl, "millrace: released a batch to other claimers", "queue", r.Queue, "tick", r.TickID,
			"holder", r.Owner, "reason", r.Reason, "running_jobs_charged_an_attempt", r.Charged)
		if cfg.OnRelease != nil {
			cfg.OnRelease(r)
		}
	}
	return err
}
