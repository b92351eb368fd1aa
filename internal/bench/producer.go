package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// payload is the small JSON document every bench job carries.
var payload = []byte(`{"account":48151623,"action":"send_receipt","channel":"email","attempt":1}`)

// producer enqueues jobs into one strategy as an application would.
type producer struct {
	s Strategy
	t *tracker

	errors  atomic.Int64
	lastErr atomic.Pointer[string]
}

// enqueue stores ids and records the outcome. A call in flight when ctx is
// cancelled still completes, so that whether its jobs exist is known.
func (p *producer) enqueue(ctx context.Context, ids []int64) {
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i] = Job{ID: id, Payload: payload}
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := p.s.Enqueue(ectx, jobs); err != nil {
		p.t.markFailed(ids)
		p.errors.Add(1)
		msg := err.Error()
		p.lastErr.Store(&msg)
		return
	}
	p.t.markEnqueued(ids)
}

// paced enqueues rate jobs per second on a fixed schedule counted from
// start, one job per autocommit statement, from conc goroutines. The
// schedule does not slow down when Postgres does: jobs that fall due while
// every goroutine is busy wait in a queue and count as offered when due.
func (p *producer) paced(ctx context.Context, start time.Time, rate float64, conc int) {
	due := make(chan int64, 1<<20)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range due {
				p.enqueue(ctx, []int64{id})
			}
		}()
	}
	tick := time.NewTicker(time.Millisecond)
	defer func() {
		tick.Stop()
		close(due)
		wg.Wait()
	}()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			target := int64(now.Sub(start).Seconds() * rate)
			for ; sent < target; sent++ {
				p.t.offered.Add(1)
				select {
				case due <- p.t.newID():
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// flat enqueues as fast as the strategy keeps up: batches of up to
// MaxBatch jobs from conc goroutines, pausing while the backlog exceeds
// limit so that the run measures throughput, not an ever-growing table.
func (p *producer) flat(ctx context.Context, conc int, limit int64) {
	batch := min(p.s.MaxBatch(), 500)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if p.t.enqueued.Load()-p.t.completed.Load() > limit {
					time.Sleep(time.Millisecond)
					continue
				}
				ids := make([]int64, batch)
				for i := range ids {
					ids[i] = p.t.newID()
				}
				p.t.offered.Add(int64(batch))
				p.enqueue(ctx, ids)
			}
		}()
	}
	wg.Wait()
}

// bulk enqueues n jobs in batches before any worker runs (the burndown
// mode), reporting progress after each batch.
func (p *producer) bulk(ctx context.Context, n int64, progress func(done int64)) error {
	batch := int64(max(p.s.MaxBatch(), 1))
	var done atomic.Int64
	var wg sync.WaitGroup
	ids := make(chan []int64, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range ids {
				p.enqueue(ctx, b)
				progress(done.Add(int64(len(b))))
			}
		}()
	}
	for sent := int64(0); sent < n && ctx.Err() == nil; {
		k := min(batch, n-sent)
		b := make([]int64, k)
		for i := range b {
			b[i] = p.t.newID()
		}
		p.t.offered.Add(k)
		ids <- b
		sent += k
	}
	close(ids)
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if e := p.errors.Load(); e > 0 {
		return fmt.Errorf("%d enqueue calls failed; last error: %s", e, *p.lastErr.Load())
	}
	return nil
}
