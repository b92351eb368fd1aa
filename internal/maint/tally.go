package maint

import (
	"context"
	"time"
)

// tally is a round's tally of history counts, at most once per
// TallyEvery: a count of completed or discarded jobs then reads the tally
// and only the history written since its newest round. Another leader's
// round within TallyEvery counts as this one's (millrace.tally runs none).
func (m *Maintainer) tally(ctx context.Context, _ *round) error {
	cfg := &m.cfg
	if time.Since(m.tallied) < cfg.TallyEvery {
		return nil
	}
	n, ran, err := cfg.Store.Tally(ctx, cfg.Term, cfg.TallyEvery)
	if err != nil {
		return err
	}
	m.tallied = time.Now()
	if ran {
		cfg.Logger.Debug("millrace: history tallied", "rows", n)
	}
	return nil
}
