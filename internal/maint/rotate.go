package maint

import (
	"context"
	"fmt"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// rotateRing is a round's rotation: it rotates and reclaims the ring
// (rotate), watches who holds back a slot it could not reclaim
// (watchRing, holders.go) and ends the readers of the ring that must end
// (endReaders, readers.go). A rotation that fails ends the step; a
// failure to read who holds the ring is logged, and the readers are left
// alone until a round reads them.
func (m *Maintainer) rotateRing(ctx context.Context, r *round) error {
	cfg := &m.cfg
	start := time.Now()
	actions, err := m.rotate(ctx)
	if took := time.Since(start); took > 100*time.Millisecond {
		cfg.Logger.Info("millrace: slow rotation round", "took", took.Round(time.Millisecond), "actions", len(actions))
	}
	if err != nil {
		return err
	}
	if cfg.OnRotate != nil {
		defer cfg.OnRotate(actions)
	}
	seen, held, err := m.watchRing(ctx, actions)
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: reading who holds the ring back failed", "err", err)
		}
		return nil
	}
	if r.renewed {
		// Not fenced by the server: only in a round whose term was
		// renewed (or an operator's round).
		m.endReaders(ctx, held)
	}
	for k := range m.cancels {
		if !seen[k] {
			delete(m.cancels, k)
		}
	}
	return nil
}

// rotate runs the round's rotation. A reader of the ring's tables holds
// every slot it read until its transaction ends; one that reads in a loop
// of short transactions holds them whenever a NOWAIT comes, and no single
// transaction of it is old enough for RingReaderLimit. So a slot that
// readers have kept from being reclaimed at every round for RotateAfter
// past its time is taken the other way: the round waits for its locks (at
// most readerWait), ahead of the readers' next transactions, and once it
// waits (again at each partition of the slot it waits for) the leader
// cancels the statements of the readers it named that block it (each then
// fails with SQLSTATE 57014, and a client that retries reads again once
// the reclaim is done). The ring turns whatever readers do; a reader that
// reads back to back loses several statements per reclaim
// (docs/deploy.md has the figures).
func (m *Maintainer) rotate(ctx context.Context) ([]storage.RingAction, error) {
	cfg := &m.cfg
	var readers []holder
	for slot, since := range m.overdue {
		if time.Since(since) >= cfg.RotateAfter {
			readers = append(readers, m.readers[slot]...)
		}
	}
	if len(readers) == 0 {
		return cfg.Store.Rotate(ctx, cfg.Term, cfg.RotateAfter, cfg.MaxCarryBytes)
	}
	return cfg.Store.RotateWaiting(ctx, cfg.Term, cfg.RotateAfter, cfg.MaxCarryBytes, readerWait, func(waiter uint32) {
		m.cancelReaders(ctx, waiter, readers)
	})
}

// watchRing goes through a rotation's actions: it watches and names, once
// per LogEvery and kind of obstacle, who holds back each slot it could
// not reclaim or rotate into (watchHolders), and records since when each
// slot has been blocked and by which readers of the ring (see rotate). It
// returns the holders of this round, and the backends and transactions
// seen holding a slot. When reading the holders of a slot fails, it
// returns the error and forgets nothing it watched before.
func (m *Maintainer) watchRing(ctx context.Context, actions []storage.RingAction) (map[holderKey]bool, []holder, error) {
	seen := map[holderKey]bool{}
	var held []holder
	blocked := map[int16]bool{}
	for _, a := range actions {
		switch a.Action {
		case storage.RingRotated, storage.RingReclaimed:
			m.cfg.Logger.Debug("millrace: "+string(a.Action), "detail", a.Detail)
		case storage.RingBlocked, storage.RingWaiting:
			// Who holds the slot, watched at every round (their age as
			// this leader saw it), named once per LogEvery.
			holders, err := m.watchHolders(ctx, a, seen)
			if err != nil {
				return nil, nil, fmt.Errorf("the holders of slot %d: %w", a.Segment, err)
			}
			held = append(held, holders...)
			if a.Action == storage.RingBlocked {
				blocked[a.Segment] = true
				if _, ok := m.overdue[a.Segment]; !ok {
					m.overdue[a.Segment] = time.Now()
				}
				m.readers[a.Segment] = ringReaders(holders)
			}
			// Rate-limited: one line per kind of obstacle and slot per LogEvery.
			if m.logEvery(string(a.Action) + string(rune('0'+a.Segment))) {
				m.warnBehind(ctx, a, holders)
			}
		}
	}
	for k := range m.holders {
		if !seen[k] {
			delete(m.holders, k) // gone, or holds it no more
		}
	}
	for slot := range m.overdue {
		if !blocked[slot] {
			delete(m.overdue, slot)
			delete(m.readers, slot)
		}
	}
	return seen, held, nil
}
