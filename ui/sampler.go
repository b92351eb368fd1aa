package ui

import (
	"context"
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

// sampler reads the queues and the activity of the last second at most
// once a second, however many pages poll it, and only while some page
// does: the database sees one reader, not one per open tab.
type sampler struct {
	pool *pgxpool.Pool
	mu   sync.Mutex
	// last is when queues were read; samples are kept oldest first.
	last    time.Time
	queues  []ops.Queue
	samples []ops.Sample
	now     func() time.Time // time.Now; a test's clock
}

func newSampler(pool *pgxpool.Pool) *sampler { return &sampler{pool: pool, now: time.Now} }

// get returns the queues and the samples, reading new ones if the last
// are a second old.
func (s *sampler) get(ctx context.Context) ([]ops.Queue, []ops.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if since := s.now().Sub(s.last); since >= 900*time.Millisecond {
		qs, err := ops.Queues(ctx, s.pool)
		if err != nil {
			return nil, nil, err
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
		s.queues, s.last = qs, s.now()
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
	s.mu.Unlock()
}
