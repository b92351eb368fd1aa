package ui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/ops"
)

// keepSamples is how many one-second samples the charts show (5 minutes).
const keepSamples = 300

// sampleGap is how long after the last sample the next one no longer
// continues from it: the charts were not watched meanwhile, so the next
// sample covers the last second only and the charts break their lines
// there (app.js: GAP_MS).
const sampleGap = 3 * time.Second

// sampler reads the activity of the last second at most once a second,
// and the queues at most once a second and within ops.CountsShare of the
// time, however many pages poll it, and only while some page does: the
// database sees one reader, not one per open tab.
type sampler struct {
	pool *pgxpool.Pool
	mu   sync.Mutex
	// last is when the last sample was read; samples are kept oldest first.
	last    time.Time
	queues  []ops.Queue
	samples []ops.Sample
	// pace spaces the reads of the queues (their live counts read every
	// job that waits or runs).
	pace ops.Pacer
	// elapsed is time.Since; a test's cost of a read
	elapsed func(time.Time) time.Duration
	// reads are the full reads of the last rateWindow, oldest first: a
	// queue's rate is its completed count's change since the oldest.
	reads []countRead
	// stale makes the next read a full one (an action changed the counts).
	stale bool
	now   func() time.Time // time.Now; a test's clock
}

// countRead is one full read of the queues (history's counts included).
type countRead struct {
	at     time.Time
	list   []ops.Queue
	queues map[string]ops.Queue
}

// rateWindow is how far back a queue's completion rate looks;
// historyEvery how often history's counts are read.
const (
	rateWindow   = time.Minute
	historyEvery = 10 * time.Second
)

// The reads of the queues take at most ops.CountsShare of the time: a
// read that took d is followed by the next no sooner than d/CountsShare
// later (a second at least). At full speed with 40,000 jobs waiting, a
// read of the live counts takes about 100 ms of a server core, and read
// every second they cost the queue a tenth of its rate; paced, the counts
// of such a backlog are two seconds old at most, and those of a short
// queue one.
func newSampler(pool *pgxpool.Pool) *sampler {
	return &sampler{pool: pool, now: time.Now, pace: ops.Pacer{Share: ops.CountsShare}, elapsed: time.Since}
}

// get returns the queues and the samples, reading new ones if the last
// are a second old.
func (s *sampler) get(ctx context.Context) ([]ops.Queue, []ops.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if since := s.now().Sub(s.last); since >= 900*time.Millisecond {
		if began := s.now(); s.queues == nil || s.pace.Due(began) {
			t0 := time.Now()
			qs, err := s.readQueues(ctx)
			if err != nil {
				return nil, nil, err
			}
			s.pace.Took(began, s.elapsed(t0))
			s.queues = qs
		}
		var from time.Time // zero: the last second
		if n := len(s.samples); n > 0 && since < sampleGap {
			from = s.samples[n-1].At
		} else if n > 0 && since >= time.Minute {
			s.samples = nil // the charts were not watched for a while: start afresh
		}
		smp, err := ops.SampleSince(ctx, s.pool, from)
		if err != nil {
			return nil, nil, err
		}
		s.last = s.now()
		s.samples = append(s.samples, smp)
		if len(s.samples) > keepSamples {
			s.samples = append([]ops.Sample(nil), s.samples[len(s.samples)-keepSamples:]...)
		}
	}
	return s.queues, append([]ops.Sample(nil), s.samples...), nil
}

// invalidate makes the next get read the queues again (after an action).
func (s *sampler) invalidate() {
	s.mu.Lock()
	s.last = time.Time{}
	s.stale = true
	s.pace.Reset()
	s.mu.Unlock()
}

// readQueues reads the queues. Every historyEvery (and at the first read
// of a while) it reads them in full, history's counts included
// (ops.Queues the first time, whose rate counts the last minute of
// history; ops.QueueCounts after); in between only the live counts
// (ops.LiveCounts), with the completed and discarded counts of the last
// full read. A queue's rate is the change of its completed count since the
// oldest full read of the last minute. At full speed, counting a minute
// of history every second cost the queue a sixth of its rate, and history's
// counts every second most of the rest.
func (s *sampler) readQueues(ctx context.Context) ([]ops.Queue, error) {
	now := s.now()
	for len(s.reads) > 0 && now.Sub(s.reads[0].at) > rateWindow {
		s.reads = s.reads[1:]
	}
	if n := len(s.reads); n > 0 && !s.stale && now.Sub(s.reads[n-1].at) < historyEvery {
		live, err := ops.LiveCounts(ctx, s.pool)
		if err != nil {
			return nil, err
		}
		last := s.reads[n-1]
		for i := range live {
			q := &live[i]
			if h, ok := last.queues[q.Name]; ok {
				q.Completed, q.Discarded, q.Cancelled, q.Rate = h.Completed, h.Discarded, h.Cancelled, h.Rate
			}
		}
		// A queue known only to history (no live job, never paused).
		names := map[string]bool{}
		for _, q := range live {
			names[q.Name] = true
		}
		for _, h := range last.list {
			if !names[h.Name] {
				live = append(live, ops.Queue{Name: h.Name, Completed: h.Completed, Discarded: h.Discarded, Cancelled: h.Cancelled, Rate: h.Rate})
			}
		}
		slices.SortFunc(live, func(a, b ops.Queue) int { return strings.Compare(a.Name, b.Name) })
		return live, nil
	}
	var qs []ops.Queue
	var err error
	first := len(s.reads) == 0
	if first {
		qs, err = ops.Queues(ctx, s.pool)
	} else {
		qs, err = ops.QueueCounts(ctx, s.pool)
	}
	if err != nil {
		return nil, err
	}
	s.stale = false
	read := countRead{at: now, list: qs, queues: make(map[string]ops.Queue, len(qs))}
	for i := range qs {
		q := &qs[i]
		if !first {
			if before, ok := s.reads[0].queues[q.Name]; ok {
				// A count falls when history expires: no rate then.
				q.Rate = max(float64(q.Completed-before.Completed), 0) / now.Sub(s.reads[0].at).Seconds()
			}
		}
		read.queues[q.Name] = *q
	}
	s.reads = append(s.reads, read)
	return qs, nil
}
