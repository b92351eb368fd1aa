// Package maint runs the protocol's maintenance in the leader process, at
// maintenance cadence: promote due scheduled jobs, rescue the batches of dead
// processes, and rotate segments. Nothing here runs per job.
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
	// RotateAfter is the minimum age of the current segment before
	// rotation (default 10s).
	RotateAfter time.Duration
	// Owner returns this process's identity (rescued batches are leased to it).
	Owner func() int32
	// Rescued receives re-leased batches to run.
	Rescued func([]*storage.Batch)
	// OnRotate observes each rotation attempt (for tests and metrics).
	OnRotate func(rotated bool, reason string)
}

// Run loops until ctx ends. It is called only while this process holds the
// leader lock; errors are logged and retried at the next tick.
func Run(ctx context.Context, cfg Config) {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.RotateAfter <= 0 {
		cfg.RotateAfter = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		Step(ctx, cfg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step runs one round of maintenance.
func Step(ctx context.Context, cfg Config) {
	if n, err := cfg.Store.Promote(ctx); err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
		}
	} else if n > 0 {
		cfg.Logger.Debug("millrace: promoted scheduled jobs", "n", n)
	}
	if owner := cfg.Owner(); owner != 0 {
		batches, err := cfg.Store.Rescue(ctx, owner)
		if err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("millrace: rescue failed", "err", err)
		}
		if len(batches) > 0 {
			n := 0
			for _, b := range batches {
				n += len(b.Jobs)
			}
			cfg.Logger.Info("millrace: rescued batches of dead processes", "batches", len(batches), "jobs", n)
			cfg.Rescued(batches)
		}
	}
	rotated, reason, err := cfg.Store.Rotate(ctx, cfg.RotateAfter)
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: rotation failed", "err", err)
		}
		return
	}
	if cfg.OnRotate != nil {
		cfg.OnRotate(rotated, reason)
	}
	if rotated {
		cfg.Logger.Debug("millrace: rotated", "detail", reason)
	}
}
