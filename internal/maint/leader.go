package maint

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Leader is a process's leadership as its session runs it: for each leader
// term the session wins, Lead runs the maintenance rounds (Run) and,
// beside them, a Promoter under the same term, until the term is over.
// The client makes one at Start and gives its session Lead, and Kick for
// the notifications of schedules (NOTIFY millrace_sched).
type Leader struct {
	cfg      Config
	promoter *Promoter
}

// NewLeader makes a Leader whose rounds run with cfg; each term sets its
// Owner and Term, and PromoterRuns (the Promoter promotes, not the
// rounds).
func NewLeader(cfg Config) *Leader {
	cfg.defaults()
	p := NewPromoter(cfg.Store, cfg.Logger)
	p.Announce = cfg.Announce
	return &Leader{cfg: cfg, promoter: p}
}

// Kick wakes the promoter: a job was scheduled or a retry queued to fall
// due soon.
func (l *Leader) Kick() { l.promoter.Kick() }

// KickAt tells the promoter, if it runs here, that a job falls due at
// (Promoter.KickAt).
func (l *Leader) KickAt(at time.Time) { l.promoter.KickAt(at) }

// Lead runs the maintenance of leader term term, held by process owner,
// until ctx ends or the term is over; then it says in the log that this
// process steps down. A term refused to the promoter ends the rounds too,
// and the other way round.
func (l *Leader) Lead(ctx context.Context, owner int32, term int64) {
	cfg := l.cfg
	cfg.Owner, cfg.Term, cfg.PromoterRuns = owner, term, true
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	promoted := make(chan error, 1)
	go func() {
		err := l.promoter.Run(lctx, term)
		stop() // a refused term ends the rounds too
		promoted <- err
	}()
	err := Run(lctx, cfg)
	stop()
	if perr := <-promoted; errors.Is(perr, ErrLostLead) {
		err = perr
	}
	if errors.Is(err, ErrLostLead) {
		cfg.Logger.Warn("millrace: this process no longer leads (its term is over); stepping down", "process", owner, "term", term)
	}
}

// Run loops until ctx ends or the term is over (it returns ErrLostLead).
// It is called only while this process holds a leader term; other errors
// are logged and retried at the next round.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	m := New(cfg)
	rctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	// The renewer stops before Run returns, whatever ended the rounds.
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	var roundStart atomic.Int64 // unix nanoseconds; 0 between rounds
	if cfg.Term != 0 {
		// The term is renewed at least three times a lease, beside the
		// rounds (a round renews it first too): a round that takes longer
		// than the lease (a rotation carrying a backlog, a loaded machine)
		// does not lose it. A round that has run for stuckRound is taken
		// to be stuck: the renewals stop and the term runs out, so that
		// another process takes over and this one is refused at its next
		// step. An operator's rounds (term 0) have no term to renew.
		renewEvery := min(cfg.Every, max(cfg.LeaderLease/3, 10*time.Millisecond))
		stuckRound := max(10*cfg.Every, 3*cfg.LeaderLease)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(renewEvery)
			defer t.Stop()
			for {
				select {
				case <-rctx.Done():
					return
				case <-t.C:
				}
				if rs := roundStart.Load(); rs != 0 && time.Since(time.Unix(0, rs)) > stuckRound {
					continue
				}
				if _, err := m.renew(rctx); errors.Is(err, ErrLostLead) {
					cancel(ErrLostLead)
					return
				}
			}
		}()
	}
	lost := func(err error) error {
		if errors.Is(context.Cause(rctx), ErrLostLead) {
			return ErrLostLead
		}
		return err
	}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		roundStart.Store(time.Now().UnixNano())
		err := m.Step(rctx)
		roundStart.Store(0)
		if err != nil {
			return lost(err)
		}
		select {
		case <-rctx.Done():
			return lost(ctx.Err())
		case <-t.C:
		}
	}
}

// renew renews the leader's term (an operator's rounds, term 0, have none
// to renew: renewed). A failure to reach the server is logged and not an
// error: the next renewal tries again, and the steps of a round are
// refused if the term ran out meanwhile. It returns ErrLostLead once the
// term is over.
func (m *Maintainer) renew(ctx context.Context) (renewed bool, err error) {
	cfg := &m.cfg
	if cfg.Term == 0 {
		return true, nil
	}
	got, err := cfg.Store.Lead(ctx, cfg.Owner, cfg.Term, cfg.LeaderLease)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: renewing the leader term failed", "term", cfg.Term, "err", err)
		}
		return false, nil
	case got == 0:
		return false, ErrLostLead
	}
	return true, nil
}

// renewStep is a round's first step: it renews the term and says in r
// whether it did.
func (m *Maintainer) renewStep(ctx context.Context, r *round) error {
	renewed, err := m.renew(ctx)
	r.renewed = renewed
	return err
}

// lostLead says whether err means the leader's term is over: a step was
// refused for it (storage.ErrFenced, which is ErrLostLead).
func lostLead(err error) bool { return storage.IsFenced(err) }
