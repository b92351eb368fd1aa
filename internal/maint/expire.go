package maint

import (
	"context"
	"time"
)

// expireEvery is how often a leader expires history.
const expireEvery = time.Minute

// expire is a round's expiry of history, about once a minute: the
// history buckets older than the retention the database holds (the
// administrator's) are truncated, and periodic slots and retry records
// past their use are forgotten (millrace.expire_history). A round that
// fails is not tried again before the next minute.
func (m *Maintainer) expire(ctx context.Context, _ *round) error {
	if time.Since(m.expired) < expireEvery {
		return nil
	}
	m.expired = time.Now()
	n, err := m.cfg.Store.ExpireHistory(ctx, m.cfg.Term)
	if err == nil && n > 0 {
		m.cfg.Logger.Debug("millrace: history buckets truncated", "n", n)
	}
	return err
}
