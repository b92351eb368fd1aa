package maint

import (
	"context"
	"slices"
	"strconv"
	"time"
)

// readerWait is how long the leader's round waits for the locks of a slot
// readers kept past its time, while it cancels their statements.
const readerWait = 100 * time.Millisecond

// Ended is how the leader ended a reader of the ring (Config.OnEndReader).
type Ended string

// How a reader of the ring is ended.
const (
	// Cancelled: its statement was cancelled (pg_cancel_backend); its
	// transaction is aborted and lets go of its locks, its session stays.
	Cancelled Ended = "cancelled"
	// Terminated: its session was ended (pg_terminate_backend).
	Terminated Ended = "terminated"
)

// stateActive is pg_stat_activity's state of a backend running a
// statement.
const stateActive = "active"

// ringReaders are the readers of the ring among the holders of a slot:
// backends holding partitions of two slots or more (a write path holds
// only the slot it writes) that run a statement, or whose state the
// leader cannot see. rotate cancels their statements once they kept the
// slot a rotation period past its time. It returns none when another
// holder is not such a reader (a writer, or a session idle in its
// transaction): the slot stays held whatever the readers do, and a round
// that waited for its locks would only queue them ahead of every
// statement that reads the ring, the queue's own claims included, and
// cancel the claims and peeks it found holding the slot with it (a
// session idle in a transaction holding one slot cut a loaded queue's
// completions from 366 to 119 a second).
func ringReaders(holders []holder) []holder {
	var readers []holder
	for _, h := range holders {
		if h.slots < 2 || (h.state != stateActive && h.state != "") {
			return nil
		}
		readers = append(readers, h)
	}
	return readers
}

// endReaders ends, when RingReaderLimit is set, the readers of the ring
// among holders (backends that hold partitions of two slots or more)
// whose transaction is older than the limit: cancelled when running a
// statement (the first time), terminated otherwise. See
// Config.RingReaderLimit.
func (m *Maintainer) endReaders(ctx context.Context, holders []holder) {
	lim := m.cfg.RingReaderLimit
	if lim <= 0 {
		return
	}
	done := map[int32]bool{}
	for _, h := range holders {
		if done[h.key.pid] || h.slots < 2 || h.age < lim {
			continue
		}
		done[h.key.pid] = true
		how, end := Terminated, m.cfg.Store.TerminateBackend
		if h.state == stateActive && !m.cancels[h.key] {
			how, end = Cancelled, m.cfg.Store.CancelBackend
		}
		attrs := []any{"pid", h.key.pid, "role", h.role, "application", h.app, "state", h.state,
			"transaction_age", h.age.Round(time.Second), "slots_held", h.slots, "ring_reader_limit", lim}
		if !h.ageKnown {
			attrs = append(attrs, "age_is", "how long this leader has seen it hold the ring (its transaction's start is not visible to the leader's role)")
		}
		if ended, err := end(ctx, h.key.pid); err != nil || !ended {
			if m.logEvery("reader" + strconv.Itoa(int(h.key.pid))) {
				m.cfg.Logger.Error("millrace: a reader of the queue's tables has held the ring longer than RingReaderLimit and could not be ended (the leader's role needs the same role or pg_signal_backend)",
					append(attrs, "err", err)...)
			}
			continue
		}
		if how == Cancelled {
			m.cancels[h.key] = true
		}
		m.cfg.Logger.Error("millrace: "+string(how)+" a reader of the queue's tables that held the ring longer than RingReaderLimit", attrs...)
		if m.cfg.OnEndReader != nil {
			m.cfg.OnEndReader(h.key.pid, how)
		}
	}
}

// cancelReaders cancels the statements of those readers (see rotate) that
// block backend waiter now (pg_blocking_pids, read in the statement that
// cancels: a backend named at the last round that has moved on to
// something else is left alone), and says so once per LogEvery. It runs
// while the round's rotation waits for the locks.
func (m *Maintainer) cancelReaders(ctx context.Context, waiter uint32, readers []holder) {
	pids := make([]int32, 0, len(readers))
	for _, h := range readers {
		if !slices.Contains(pids, h.key.pid) {
			pids = append(pids, h.key.pid)
		}
	}
	cancelled, err := m.cfg.Store.CancelBlocking(ctx, int32(waiter), pids)
	if err != nil {
		if ctx.Err() == nil && m.logEvery("blocking") {
			m.cfg.Logger.Error("millrace: cancelling the readers of the queue's tables that block the reclaim failed (the leader's role needs the same role or pg_signal_backend)", "err", err)
		}
		return
	}
	done := map[int32]bool{}
	for _, h := range readers {
		if done[h.key.pid] || !slices.Contains(cancelled, h.key.pid) {
			continue
		}
		done[h.key.pid] = true
		if m.cfg.OnEndReader != nil {
			m.cfg.OnEndReader(h.key.pid, Cancelled)
		}
		if m.logEvery("overdue" + strconv.Itoa(int(h.key.pid))) {
			m.cfg.Logger.Warn("millrace: cancelled the statement of a reader of the queue's tables that kept a slot from being reclaimed a rotation period past its time",
				"pid", h.key.pid, "role", h.role, "application", h.app, "slot", h.key.slot, "rotate_after", m.cfg.RotateAfter)
		}
	}
}
