package maint

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// holder is a backend a rotation named as holding a slot, as the leader
// sees it.
type holder struct {
	key              holderKey
	role, app, state string
	// age is its transaction's age: the real one when visible (ageKnown),
	// else how long this leader has seen it hold the slot.
	age      time.Duration
	ageKnown bool
	slots    int // the slots of the ring it holds partitions of
	desc     string
}

// holderKey is a backend seen holding a slot the leader could not reclaim,
// and what it held it with (its transaction's start or ids when visible).
type holderKey struct {
	pid  int32
	slot int16
	xact string
}

// watchHolders describes the backends that action a names as holding its
// slot (a.Holders), and records them in seen. The rotation runs as the
// schema's owner, which cannot see another role's transaction start
// (pg_stat_activity shows it only to members of that role and of
// pg_read_all_stats): it says it cannot see such a holder's transaction
// start. The leader looks again with its own rights and gives each holder
// its role and its real age when visible, else the age of its transaction
// id or snapshot in transactions, and how long this leader has seen it
// hold the slot.
func (m *Maintainer) watchHolders(ctx context.Context, a storage.RingAction, seen map[holderKey]bool) ([]holder, error) {
	if len(a.Holders) == 0 {
		return nil, nil
	}
	backends, err := m.cfg.Store.SlotHolders(ctx, a.Holders)
	if err != nil {
		return nil, err
	}
	out := make([]holder, 0, len(backends))
	now := time.Now()
	for _, b := range backends {
		k := holderKey{pid: b.PID, slot: a.Segment, xact: b.Xact}
		seen[k] = true
		first, ok := m.holders[k]
		if !ok {
			first = now
			m.holders[k] = now
		}
		parts := []string{"role " + b.Role}
		if b.Application != "" {
			parts = append(parts, "application "+strconv.Quote(b.Application))
		}
		if b.State != "" {
			parts = append(parts, b.State)
		}
		h := holder{key: k, role: b.Role, app: b.Application, state: b.State, age: now.Sub(first), slots: b.Slots}
		if b.XactAge != nil {
			h.age, h.ageKnown = *b.XactAge, true
			parts = append(parts, fmt.Sprintf("transaction open %d s", int64(b.XactAge.Seconds())))
		} else {
			switch {
			case b.XIDAge != nil:
				parts = append(parts, fmt.Sprintf("its transaction id is %d transactions old", *b.XIDAge))
			case b.XminAge != nil:
				parts = append(parts, fmt.Sprintf("its snapshot is %d transactions old", *b.XminAge))
			}
			parts = append(parts, fmt.Sprintf("seen holding slot %d for %d s", a.Segment, int64(now.Sub(first).Seconds())),
				fmt.Sprintf("its transaction's start is not visible to role %s (grant it pg_read_all_stats to see it)", b.Viewer))
		}
		if b.Slots > 1 {
			parts = append(parts, fmt.Sprintf("it holds %d slots of the ring: a reader of the queue's tables", b.Slots))
			if lim := m.cfg.RingReaderLimit; lim > 0 {
				parts = append(parts, fmt.Sprintf("it is ended once its transaction is %s old (RingReaderLimit)", lim))
			} else {
				parts = append(parts, "storage grows with arrivals until it ends (RingReaderLimit bounds it; it is off)")
			}
		}
		h.desc = fmt.Sprintf("pid %d (%s)", b.PID, strings.Join(parts, ", "))
		out = append(out, h)
	}
	return out, nil
}

// warnBehind logs why the ring could not move and how far behind it is,
// and who holds it back.
func (m *Maintainer) warnBehind(ctx context.Context, a storage.RingAction, holders []holder) {
	attrs := []any{"detail", a.Detail}
	if len(holders) > 0 {
		desc := make([]string, len(holders))
		for i, h := range holders {
			desc[i] = h.desc
		}
		attrs = append(attrs, "holders", strings.Join(desc, "; "))
	}
	if st, err := storage.Ring(ctx, m.cfg.Store.Pool); err == nil {
		attrs = append(attrs, "current_slot", st.Current, "current_for", time.Since(st.Since).Round(time.Second),
			"last_reclaim_ago", time.Since(st.LastReclaim).Round(time.Second))
	} else if ctx.Err() == nil {
		attrs = append(attrs, "ring_stats_err", err)
	}
	m.cfg.Logger.Warn("millrace: rotation is held back", attrs...)
}
