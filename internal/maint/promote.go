package maint

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// promote is a round's promotion of the scheduled jobs that are due,
// unless a Promoter runs beside the rounds (PromoterRuns): promotion is
// then the promoter's.
func (m *Maintainer) promote(ctx context.Context, _ *round) error {
	cfg := &m.cfg
	if cfg.PromoterRuns {
		return nil
	}
	n, err := cfg.Store.Promote(ctx, cfg.Term, cfg.CompactMin)
	if err == nil && n > 0 {
		cfg.Logger.Debug("millrace: promoted scheduled jobs", "n", n)
	}
	return err
}

// Promoter promotes scheduled jobs as they fall due: it sleeps until the
// next due time (at most MaxWait), or until Kick says a job was scheduled
// or a retry queued (NOTIFY millrace_sched), so a job starts within a few
// milliseconds of its time, and a job whose transaction commits after its
// time starts when it commits.
type Promoter struct {
	// Store sends the promotions.
	Store *storage.Store
	// Logger says when a promotion fails.
	Logger *slog.Logger
	// MaxWait bounds a sleep (default 1s): a job scheduled meanwhile to
	// fall due later than that, or whose transaction committed after its
	// run_at with no notification, is promoted within it. A job scheduled
	// to fall due sooner (an insert, a retry, a snooze) sends NOTIFY
	// millrace_sched, which kicks the promoter; farther ones send none (a
	// NOTIFY serializes commits). An idle round reads two index edges and
	// writes nothing: two calls a second.
	MaxWait time.Duration
	// MinGap spaces promotion rounds (default 10ms): jobs falling due
	// within it are promoted together, bounding rounds to 100 a second.
	MinGap time.Duration
	// CompactMin is the least number of promotions between two compactions
	// of the schedule (default 10000).
	CompactMin int64
	// Announce tells the claimers of queue that a round moved jobs into
	// it, after the round's commit (nil: a NOTIFY from the Store).
	Announce func(queue string)
	kick     chan struct{}

	mu      sync.Mutex
	kickAt  time.Time // the earliest due time kicked since the last look (KickAt)
	kickNow bool      // a kick without a due time came (Kick)
}

// PromoterWait is the promoter's longest sleep (Promoter.MaxWait): a job
// falling due sooner than this after it is scheduled is announced by a
// NOTIFY on millrace_sched.
const PromoterWait = time.Second

// NewPromoter makes a Promoter.
func NewPromoter(s *storage.Store, logger *slog.Logger) *Promoter {
	if logger == nil {
		logger = slog.Default()
	}
	return &Promoter{Store: s, Logger: logger, MaxWait: PromoterWait, MinGap: 10 * time.Millisecond, CompactMin: 10000,
		kick: make(chan struct{}, 1)}
}

// Kick says a schedule changed at a time the caller does not know (a
// retry or a snooze, due by the worker's clock): the promoter runs a round
// soon (after MinGap), which reads the next due time.
func (p *Promoter) Kick() {
	p.mu.Lock()
	p.kickNow = true
	p.mu.Unlock()
	p.signal()
}

// KickAt says a job was scheduled to fall due at (the server's time, as
// the NOTIFY of its insert says): the promoter runs its next round then
// if that is sooner than the round it has planned, and runs no round to
// learn it (at 50 jobs/s of the full mix, half of all rounds were such
// reads, and promoted nothing).
func (p *Promoter) KickAt(at time.Time) {
	p.mu.Lock()
	if p.kickAt.IsZero() || at.Before(p.kickAt) {
		p.kickAt = at
	}
	p.mu.Unlock()
	p.signal()
}

func (p *Promoter) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// kicked returns and clears what the kicks since the last call said: the
// earliest due time kicked, and whether a kick without one came.
func (p *Promoter) kicked() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, now := p.kickAt, p.kickNow
	p.kickAt, p.kickNow = time.Time{}, false
	return at, now
}

// Run promotes under leader term term until ctx ends, or until the term
// is over (it returns ErrLostLead).
func (p *Promoter) Run(ctx context.Context, term int64) error {
	for ctx.Err() == nil {
		wait := p.MaxWait
		began := time.Now()
		// One call: the round, the queues it moved jobs into, and the
		// next due time. The round sends no NOTIFY: one in its transaction
		// held the server's one notification lock through its durable
		// commit, and every process's announcements waited behind it.
		if r, err := p.Store.PromoteDue(ctx, term, p.CompactMin); lostLead(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				p.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
			}
		} else {
			p.announce(ctx, r.Queues)
			if !r.Next.IsZero() {
				wait = min(wait, max(time.Until(r.Next), time.Until(began.Add(p.MinGap)), time.Millisecond))
			}
		}
		// The next round runs at target: the next due time, sooner if a
		// kick says a job falls due sooner (not before MinGap after this
		// round began).
		target := time.Now().Add(wait)
		t := time.NewTimer(wait)
	sleep:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-p.kick:
				at, now := p.kicked()
				next := target
				if now {
					next = time.Now() // unknown: a round soon reads the next due time
				}
				if !at.IsZero() && at.Before(next) {
					next = at
				}
				if !next.Before(target) {
					continue // nothing falls due before the planned round
				}
				target = next
				if gap := began.Add(p.MinGap); target.Before(gap) {
					target = gap
				}
				t.Reset(max(time.Until(target), 0))
			case <-t.C:
				break sleep
			}
		}
		t.Stop()
	}
	return ctx.Err()
}

// announce tells the claimers of queues that a round moved jobs into them.
func (p *Promoter) announce(ctx context.Context, queues []string) {
	if len(queues) == 0 {
		return
	}
	if p.Announce != nil {
		for _, q := range queues {
			p.Announce(q)
		}
		return
	}
	if err := p.Store.Announce(ctx, queues); err != nil && ctx.Err() == nil {
		p.Logger.Warn("millrace: announcing promoted jobs failed; their claimers find them at their next poll", "queues", queues, "err", err)
	}
}
