// Package maint runs the protocol's maintenance in the leader process, at
// maintenance cadence: promote due scheduled jobs, release the batches of
// dead or stuck holders to any claimer, and rotate and reclaim the ring.
// Nothing here runs per job.
package maint

import (
	"context"
	"log/slog"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Config configures the maintenance loop.
type Config struct {
	Store  *storage.Store
	Logger *slog.Logger
	// Every is the maintenance cadence (default 1s).
	Every time.Duration
	// RotateAfter is the life of a slot as current, and the grace before
	// a slot that left use is reclaimed (default 10s).
	RotateAfter time.Duration
	// StuckAfter releases a batch whose lease is older than this even
	// though its holder lives (default 1h).
	StuckAfter time.Duration
	// CompactMin is the least number of promoted jobs between two
	// compactions of the schedule (default 10000).
	CompactMin int64
	// LogEvery rate-limits the log line that says why a slot cannot be
	// reclaimed or the ring cannot rotate (default 30s per reason kind).
	LogEvery time.Duration
	// OnRotate observes each round's actions (for tests and metrics).
	OnRotate func([]storage.RingAction)
	// OnRelease observes each batch released to other claimers.
	OnRelease func(storage.Released)
}

func (cfg *Config) defaults() {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.RotateAfter <= 0 {
		cfg.RotateAfter = 10 * time.Second
	}
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = time.Hour
	}
	if cfg.CompactMin <= 0 {
		cfg.CompactMin = 10000
	}
	if cfg.LogEvery <= 0 {
		cfg.LogEvery = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
}

// Run loops until ctx ends. It is called only while this process holds the
// leader lock; errors are logged and retried at the next round.
func Run(ctx context.Context, cfg Config) {
	cfg.defaults()
	m := &Maintainer{cfg: cfg, logged: map[string]time.Time{}}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		m.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Maintainer is one leader's maintenance state (what it logged when).
type Maintainer struct {
	cfg    Config
	logged map[string]time.Time
}

// New makes a Maintainer whose Step tests can call directly.
func New(cfg Config) *Maintainer {
	cfg.defaults()
	return &Maintainer{cfg: cfg, logged: map[string]time.Time{}}
}

// Step runs one round of maintenance.
func (m *Maintainer) Step(ctx context.Context) {
	cfg := &m.cfg
	if n, err := cfg.Store.Promote(ctx, cfg.CompactMin); err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
		}
	} else if n > 0 {
		cfg.Logger.Debug("millrace: promoted scheduled jobs", "n", n)
	}
	released, err := cfg.Store.Rescue(ctx, cfg.StuckAfter)
	if err != nil && ctx.Err() == nil {
		cfg.Logger.Warn("millrace: rescue failed", "err", err)
	}
	for _, r := range released {
		lvl := slog.LevelInfo
		if r.Reason == "stuck" {
			lvl = slog.LevelWarn
		}
		cfg.Logger.Log(ctx, lvl, "millrace: released a batch to other claimers", "queue", r.Queue, "tick", r.TickID,
			"holder", r.Owner, "reason", r.Reason)
		if cfg.OnRelease != nil {
			cfg.OnRelease(r)
		}
	}
	start := time.Now()
	actions, err := cfg.Store.Rotate(ctx, cfg.RotateAfter)
	if took := time.Since(start); took > 100*time.Millisecond {
		cfg.Logger.Info("millrace: slow rotation round", "took", took.Round(time.Millisecond), "actions", len(actions))
	}
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: rotation failed", "err", err)
		}
		return
	}
	for _, a := range actions {
		switch a.Action {
		case "rotated", "reclaimed":
			cfg.Logger.Debug("millrace: "+a.Action, "detail", a.Detail)
		case "blocked", "waiting":
			// Rate-limited: one line per kind of obstacle and slot per LogEvery.
			key := a.Action + string(rune('0'+a.Segment))
			if time.Since(m.logged[key]) >= cfg.LogEvery {
				m.logged[key] = time.Now()
				m.warnBehind(ctx, a)
			}
		}
	}
	if cfg.OnRotate != nil {
		cfg.OnRotate(actions)
	}
}

// warnBehind logs why the ring could not move and how far behind it is.
func (m *Maintainer) warnBehind(ctx context.Context, a storage.RingAction) {
	attrs := []any{"detail", a.Detail}
	if st, err := storage.Ring(ctx, m.cfg.Store.Pool); err == nil {
		attrs = append(attrs, "current_slot", st.Current, "current_for", time.Since(st.Since).Round(time.Second),
			"last_reclaim_ago", time.Since(st.LastReclaim).Round(time.Second))
	}
	m.cfg.Logger.Warn("millrace: rotation is held back", attrs...)
}
