package maint

import (
	"context"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Periodic is a job enqueued at every slot of a schedule.
type Periodic struct {
	// Name identifies the job's slots in the database.
	Name string
	// Schedule gives the slot after a time.
	Schedule interface{ Next(time.Time) time.Time }
	// Job is the job to enqueue at a slot.
	Job func() (storage.NewJob, error)
	// RunOnStart enqueues the latest slot at or before the leader's start
	// when the job never ran; otherwise its first slot is the next one.
	RunOnStart bool
}

// runPeriodic enqueues the due slot of every periodic job: the latest slot
// at or before now that comes after the newest one enqueued (slots missed
// while no leader ran are skipped, not replayed). The database's primary
// key on (name, slot) makes each slot run once across leaders. It stops
// at the first slot refused for the term (the term is over) and returns
// that refusal.
func (m *Maintainer) runPeriodic(ctx context.Context, _ *round) error {
	if len(m.cfg.Periodic) == 0 {
		return nil
	}
	// Slots are decided on the server's clock: a leader whose clock runs
	// fast or slow neither runs a slot early nor records one in the future.
	now, err := m.cfg.Store.Now(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("millrace: reading the server's clock for periodic jobs failed", "err", err)
		}
		return nil
	}
	if m.started.IsZero() {
		m.started = now
	}
	for _, p := range m.cfg.Periodic {
		last, ok := m.last[p.Name]
		if !ok {
			var err error
			if last, err = m.cfg.Store.PeriodicLast(ctx, p.Name); err != nil {
				if ctx.Err() == nil {
					m.cfg.Logger.Warn("millrace: reading periodic job state failed", "name", p.Name, "err", err)
				}
				continue
			}
			if last.IsZero() {
				last = m.started
				if p.RunOnStart {
					last = m.started.Add(-366 * 24 * time.Hour)
				}
			}
			m.last[p.Name] = last
		}
		slot := time.Time{}
		for t, i := p.Schedule.Next(last), 0; !t.IsZero() && !t.After(now) && i < 100000; t, i = p.Schedule.Next(t), i+1 {
			slot = t
		}
		if slot.IsZero() {
			continue
		}
		j, err := p.Job()
		if err != nil {
			m.cfg.Logger.Error("millrace: building periodic job failed", "name", p.Name, "err", err)
			m.last[p.Name] = slot
			continue
		}
		id, inserted, err := m.cfg.Store.PeriodicRun(ctx, m.cfg.Term, p.Name, slot, j)
		if lostLead(err) {
			return err
		}
		if err != nil {
			if ctx.Err() == nil {
				m.cfg.Logger.Warn("millrace: enqueuing periodic job failed", "name", p.Name, "slot", slot, "err", err)
			}
			continue
		}
		m.last[p.Name] = slot
		if inserted {
			m.cfg.Logger.Debug("millrace: periodic job enqueued", "name", p.Name, "slot", slot, "job", id)
		}
	}
	return nil
}
