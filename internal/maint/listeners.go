package maint

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// watchListeners looks, while PostgreSQL's notification queue is in use,
// for backends blocked writing to a client that does not read
// (wait_event ClientWrite): a listener whose process is stopped keeps the
// queue from being emptied. It names each one once it has been blocked at
// every round for ListenerStuckAfter, and ends it if it is the session
// connection of a millrace process (its application_name is
// storage.SessionName of the process). Ending it decides nothing about
// the process: its liveness is its lease, and it connects again if it
// resumes. Seeing another role's wait_event needs the same role or
// pg_read_all_stats; ending its backend, the same role or
// pg_signal_backend. The server does not fence this step: it acts only in
// a round that renewed the term (or an operator's round).
func (m *Maintainer) watchListeners(ctx context.Context, r *round) error {
	if !r.renewed {
		return nil
	}
	store := m.cfg.Store
	usage, err := store.NotificationQueueUsage(ctx)
	if err != nil || usage == 0 {
		clear(m.writers)
		return err
	}
	ws, err := store.ClientWriters(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := map[int32]bool{}
	for _, w := range ws {
		seen[w.PID] = true
		first, ok := m.writers[w.PID]
		if !ok {
			m.writers[w.PID] = now
			continue
		}
		blocked := now.Sub(first)
		if blocked < m.cfg.ListenerStuckAfter {
			continue
		}
		attrs := []any{"pid", w.PID, "role", w.Role, "application", w.Application, "blocked_for", blocked.Round(time.Second),
			"queue_usage", fmt.Sprintf("%.6f%%", usage*100)}
		key := "listener" + strconv.Itoa(int(w.PID))
		if w.Process == nil {
			// Not a millrace process: named, at most once per LogEvery.
			if m.logEvery(key) {
				m.cfg.Logger.Warn("millrace: a backend has not read what it was sent (a stopped listener keeps the notification queue from being emptied); it is not a millrace process and is left alone", attrs...)
			}
			continue
		}
		attrs = append(attrs, "process", *w.Process)
		if ended, err := store.TerminateBackend(ctx, w.PID); err != nil || !ended {
			if m.logEvery(key) {
				m.cfg.Logger.Warn("millrace: a stopped process's session has not read its notifications, and could not be ended (the leader's role needs the same role or pg_signal_backend)",
					append(attrs, "err", err)...)
			}
			continue
		}
		delete(m.writers, w.PID)
		m.cfg.Logger.Warn("millrace: ended the session connection of a process that has not read its notifications (stopped?); its batches go to others once its lease runs out", attrs...)
		if m.cfg.OnEndListener != nil {
			m.cfg.OnEndListener(w.PID)
		}
	}
	for pid := range m.writers {
		if !seen[pid] {
			delete(m.writers, pid) // reads again, or gone
		}
	}
	return nil
}
