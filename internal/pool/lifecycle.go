// The lifecycle: a pool is made, started and stopped, under a process
// identity.

package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// New makes a pool; Start runs it.
func New(cfg Config) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FlushDelay <= 0 {
		cfg.FlushDelay = DefaultFlushDelay
	}
	if cfg.KeyFlushDelay <= 0 {
		cfg.KeyFlushDelay = 5 * time.Millisecond
	}
	if cfg.Yield == 0 {
		cfg.Yield = DefaultYield
	}
	if cfg.Gather == 0 {
		cfg.Gather = DefaultGather
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBatchJobs <= 0 {
		cfg.MaxBatchJobs = 1000
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	if cfg.ProbeFrom <= 0 {
		cfg.ProbeFrom = time.Second
	}
	if cfg.CancelPoll <= 0 {
		cfg.CancelPoll = time.Second
	}
	if cfg.TimeoutGrace <= 0 {
		cfg.TimeoutGrace = 2 * time.Second
	}
	p := &Pool{cfg: cfg, queues: map[string]*queue{}, running: map[int64]*running{}, acks: make(chan storage.Ack, 4096),
		starts: make(chan startReq, 256), markSlots: make(chan struct{}, 1), probes: make(chan probe, len(cfg.Queues)), ackerDone: make(chan struct{}), ackStop: make(chan struct{})}
	for name, n := range cfg.Queues {
		p.queues[name] = &queue{name: name, workers: n, maxJobs: min(cfg.MaxBatchJobs, n), gate: &gate{}, jobs: make(chan item, n), start: make(chan item), wake: make(chan struct{}, 1),
			heard: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	}
	return p
}

// SetOwner sets the process identity under which batches are claimed. After
// a lost identity (its lease ran out) the client registers a new one (0
// meanwhile: no claim is made and no job starts); jobs of batches leased
// under the old one that have not started are dropped here, since their
// batches are released.
func (p *Pool) SetOwner(id int32) {
	p.owner.Store(id)
	p.identityGen.Add(1)
}

// Owner is the current process identity.
func (p *Pool) Owner() int32 { return p.owner.Load() }

// Start launches the claimers, workers and acker. The values of ctx (not
// its end: Stop ends the pool) reach every job's context.
func (p *Pool) Start(ctx context.Context) {
	base := context.WithoutCancel(ctx)
	p.claimCtx, p.stopClaims = context.WithCancel(base)
	p.jobCtx, p.cancelJobs = context.WithCancel(base)
	p.ackCtx, p.abortAcks = context.WithCancel(base)
	for _, q := range p.queues {
		p.claimersWG.Add(1)
		go p.claim(q)
		for i := 0; i < q.workers; i++ {
			p.workersWG.Add(1)
			go p.work(q)
		}
	}
	go p.acker()
	go p.marker()
	go p.pollCancels()
	go p.prober()
}

// Abandon stops the jobs running under identity owner, which the process
// lost (its lease ran out, and its batches were released): their contexts
// are cancelled (cause ErrIdentityLost) and an attempt cut short this way
// writes no outcome; the jobs run again elsewhere. It returns how many
// jobs it stopped.
func (p *Pool) Abandon(owner int32) int {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	n := 0
	for _, r := range p.running {
		if r.owner == owner {
			r.cancel(errIdentityLost)
			n++
		}
	}
	return n
}

// errIdentityLost is the cause of a job's context cancelled because its
// process lost the identity that held its batch.
var errIdentityLost = errors.New("millrace: this process lost its identity (its lease ran out); the job's batch went to others")

// ErrIdentityLost is the context cause a job sees when its process's lease
// ran out while it ran (the process was stopped or cut off for too long)
// and its batch went to other processes.
var ErrIdentityLost = errIdentityLost

// Stop stops claiming and starting jobs at once and lets running jobs
// finish. When ctx has a deadline, the jobs' contexts are cancelled a
// little before it (see stopGrace), so that jobs that honour their context
// return in time; without one, when ctx ends. Stop returns by ctx's
// deadline whatever the jobs do, and nil if every job returned by then.
// The outcomes known by then are written, and the batches this process
// still holds (jobs claimed but not started, or cut short) are released to
// any claimer of their queue.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopping.Store(true)
	p.stopClaims()
	p.claimersWG.Wait()
	finished := make(chan struct{})
	go func() { p.workersWG.Wait(); close(finished) }()
	var cancelAt <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline) - p.stopGrace(time.Until(deadline)))
		defer t.Stop()
		cancelAt = t.C
	}
	var err error
	select {
	case <-finished:
	case <-cancelAt:
		p.cancelJobs()
		select {
		case <-finished:
		case <-ctx.Done():
			err = fmt.Errorf("millrace: stop deadline passed with jobs still running after their context was cancelled; %w", ctx.Err())
		}
	case <-ctx.Done():
		err = fmt.Errorf("millrace: stop deadline passed with jobs still running; %w", ctx.Err())
	}
	p.cancelJobs()
	close(p.ackStop)
	select {
	case <-p.ackerDone:
	case <-ctx.Done():
		// Give up the outcomes not yet written (their batches are
		// released and the jobs run again) rather than leave the acker
		// retrying after Stop returned.
		p.abortAcks()
		<-p.ackerDone
		if err == nil {
			err = fmt.Errorf("millrace: stop deadline passed while writing job outcomes; %w", ctx.Err())
		}
		return err // the leader releases what this process held once its session ends
	}
	p.abortAcks()
	if owner := p.Owner(); owner != 0 {
		if _, rerr := p.cfg.Store.Release(ctx, owner); rerr != nil && err == nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("millrace: releasing unfinished batches at stop failed; the leader releases them", "err", rerr)
		}
	}
	return err
}

// stopGrace is the part of the time left to Stop that running jobs get
// after their context is cancelled, to return and have what they did
// written: a fifth of it, at most TimeoutGrace (2s by default).
func (p *Pool) stopGrace(left time.Duration) time.Duration {
	return max(min(left/5, p.cfg.TimeoutGrace), 0)
}

// StopAndCancel cancels the context of every running job at once, then
// stops as Stop does. Jobs cut short this way are not counted as attempts.
func (p *Pool) StopAndCancel(ctx context.Context) error {
	p.stopping.Store(true)
	p.cancelJobs()
	return p.Stop(ctx)
}
