// Package maint runs the protocol's maintenance in the leader process, at
// maintenance cadence: renew the leader's term, promote due scheduled jobs,
// release the batches of dead or stuck holders to any claimer, and rotate
// and reclaim the ring. Every step passes the leader's term, and the first
// step refused for it (the term is over) ends the loop. Nothing here runs
// per job.
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
	// Owner is the leading process and Term its leader term (0: an
	// operator's rounds, not fenced, never renewed).
	Owner int32
	Term  int64
	// LeaderLease is how long each renewal extends the term (default
	// storage.DefaultLeaderLease). A round renews it first, at most once a
	// second: a leader that stops making rounds loses its term.
	LeaderLease time.Duration
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
	// CompletedRetention and DiscardedRetention bound how long history
	// keeps completed jobs and every other finished attempt (defaults 24h
	// and 7 days); expired buckets are truncated about once a minute.
	CompletedRetention time.Duration
	DiscardedRetention time.Duration
	// Periodic jobs to enqueue at each slot of their schedule.
	Periodic []Periodic
	// TallyEvery is the least time between two tally rounds of history
	// counts (default 10s): a count of completed or discarded jobs reads
	// the tally and the history written since its newest round.
	TallyEvery time.Duration
}

// Periodic is a job enqueued at every slot of a schedule.
type Periodic struct {
	Name     string
	Schedule interface{ Next(time.Time) time.Time }
	Job      func() (storage.NewJob, error) // the job to enqueue at a slot
	// RunOnStart enqueues the latest slot at or before the leader's start
	// when the job never ran; otherwise its first slot is the next one.
	RunOnStart bool
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
	if cfg.CompletedRetention <= 0 {
		cfg.CompletedRetention = 24 * time.Hour
	}
	if cfg.DiscardedRetention <= 0 {
		cfg.DiscardedRetention = 7 * 24 * time.Hour
	}
	if cfg.TallyEvery <= 0 {
		cfg.TallyEvery = 10 * time.Second
	}
	if cfg.LeaderLease <= 0 {
		cfg.LeaderLease = storage.DefaultLeaderLease
	}
}

// ErrLostLead is returned by Run and Step when the leader's term is over
// (another process took over, or the lease ran out before a renewal): the
// process must stop leading.
var ErrLostLead = storage.ErrFenced

// Run loops until ctx ends or the term is over (it returns ErrLostLead).
// It is called only while this process holds a leader term; other errors
// are logged and retried at the next round.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	m := New(cfg)
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		if err := m.Step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Maintainer is one leader's maintenance state (what it logged when).
type Maintainer struct {
	cfg     Config
	logged  map[string]time.Time
	started time.Time
	expired time.Time            // when history was last expired
	tallied time.Time            // when history was last tallied (or found tallied by another leader)
	last    map[string]time.Time // newest slot enqueued, per periodic job
}

// New makes a Maintainer whose Step tests can call directly.
func New(cfg Config) *Maintainer {
	cfg.defaults()
	return &Maintainer{cfg: cfg, logged: map[string]time.Time{}, started: time.Now(), last: map[string]time.Time{}}
}

// Step runs one round of maintenance: it renews the leader's term, then
// runs each step under it. It returns ErrLostLead (and does nothing more)
// once the term is over.
func (m *Maintainer) Step(ctx context.Context) error {
	cfg := &m.cfg
	if cfg.Term != 0 {
		got, err := cfg.Store.Lead(ctx, cfg.Owner, cfg.Term, cfg.LeaderLease)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("millrace: renewing the leader term failed", "term", cfg.Term, "err", err)
			}
			// Not renewed: the next round tries again, and the steps below
			// are refused if the term ran out meanwhile.
		} else if got == 0 {
			return ErrLostLead
		}
	}
	fencedErr := func(err error) bool { return storage.IsFenced(err) }
	if n, err := cfg.Store.Promote(ctx, cfg.Term, cfg.CompactMin); fencedErr(err) {
		return ErrLostLead
	} else if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
		}
	} else if n > 0 {
		cfg.Logger.Debug("millrace: promoted scheduled jobs", "n", n)
	}
	released, err := cfg.Store.Rescue(ctx, cfg.Term, cfg.StuckAfter)
	if fencedErr(err) {
		return ErrLostLead
	}
	if err != nil && ctx.Err() == nil {
		cfg.Logger.Warn("millrace: rescue failed", "err", err)
	}
	for _, r := range released {
		lvl := slog.LevelInfo
		if r.Reason == "stuck" || r.Charged > 0 {
			lvl = slog.LevelWarn
		}
		cfg.Logger.Log(ctx, lvl, "millrace: released a batch to other claimers", "queue", r.Queue, "tick", r.TickID,
			"holder", r.Owner, "reason", r.Reason, "running_jobs_charged_an_attempt", r.Charged)
		if cfg.OnRelease != nil {
			cfg.OnRelease(r)
		}
	}
	if err := m.runPeriodic(ctx); err != nil {
		return err
	}
	if time.Since(m.tallied) >= cfg.TallyEvery {
		if n, ran, err := cfg.Store.Tally(ctx, cfg.Term, cfg.TallyEvery); fencedErr(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("millrace: tallying history failed", "err", err)
			}
		} else {
			m.tallied = time.Now()
			if ran {
				cfg.Logger.Debug("millrace: history tallied", "rows", n)
			}
		}
	}
	if time.Since(m.expired) >= time.Minute {
		m.expired = time.Now()
		if n, err := cfg.Store.ExpireHistory(ctx, cfg.Term, cfg.CompletedRetention, cfg.DiscardedRetention); fencedErr(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("millrace: expiring history failed", "err", err)
			}
		} else if n > 0 {
			cfg.Logger.Debug("millrace: history buckets truncated", "n", n)
		}
	}
	start := time.Now()
	actions, err := cfg.Store.Rotate(ctx, cfg.Term, cfg.RotateAfter)
	if took := time.Since(start); took > 100*time.Millisecond {
		cfg.Logger.Info("millrace: slow rotation round", "took", took.Round(time.Millisecond), "actions", len(actions))
	}
	if fencedErr(err) {
		return ErrLostLead
	}
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: rotation failed", "err", err)
		}
		return nil
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
	return nil
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

// runPeriodic enqueues the due slot of every periodic job: the latest slot
// at or before now that comes after the newest one enqueued (slots missed
// while no leader ran are skipped, not replayed). The database's primary
// key on (name, slot) makes each slot run once across leaders. It returns
// ErrLostLead when the term is over.
func (m *Maintainer) runPeriodic(ctx context.Context) error {
	now := time.Now()
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
		if storage.IsFenced(err) {
			return ErrLostLead
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

// Promoter promotes scheduled jobs as they fall due: it sleeps until the
// next due time (at most MaxWait), or until Kick says a job was scheduled
// or a retry queued (NOTIFY millrace_sched), so a job starts within a few
// milliseconds of its time, and a job whose transaction commits after its
// time starts when it commits.
type Promoter struct {
	Store  *storage.Store
	Logger *slog.Logger
	// MaxWait bounds a sleep (default 50ms): a job scheduled meanwhile, a
	// retry, or a transaction that committed after its job's run_at is
	// promoted within it. Schedules send no NOTIFY (a NOTIFY serializes
	// commits); an idle round reads two index edges and writes nothing.
	MaxWait time.Duration
	// MinGap spaces promotion rounds (default 10ms): jobs falling due
	// within it are promoted together, bounding rounds to 100 a second.
	MinGap time.Duration
	// CompactMin is the least number of promotions between two compactions
	// of the schedule (default 10000).
	CompactMin int64
	kick       chan struct{}
}

// NewPromoter makes a Promoter.
func NewPromoter(s *storage.Store, logger *slog.Logger) *Promoter {
	if logger == nil {
		logger = slog.Default()
	}
	return &Promoter{Store: s, Logger: logger, MaxWait: 50 * time.Millisecond, MinGap: 10 * time.Millisecond, CompactMin: 10000,
		kick: make(chan struct{}, 1)}
}

// Kick wakes the promoter now.
func (p *Promoter) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run promotes under leader term term until ctx ends, or until the term
// is over (it returns ErrLostLead).
func (p *Promoter) Run(ctx context.Context, term int64) error {
	for ctx.Err() == nil {
		wait := p.MaxWait
		round := time.Now()
		if _, err := p.Store.Promote(ctx, term, p.CompactMin); storage.IsFenced(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				p.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
			}
		} else if next, err := p.Store.NextDue(ctx); err == nil && !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Until(round.Add(p.MinGap)), time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-p.kick:
			// A schedule changed: promote soon, but not more often than
			// every MinGap.
			if gap := time.Until(round.Add(p.MinGap)); gap > 0 {
				t.Reset(gap)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		case <-t.C:
		}
		t.Stop()
	}
	return ctx.Err()
}
