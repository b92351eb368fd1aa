package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	// mix, when set, makes the paced producer offer the mix's kinds of
	// jobs through mixer (s as a Mixer).
	mix      *mixer
	mixer    Mixer
	schedMax time.Duration // the longest delay of a scheduled job

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

// fail records an error of the mix's inserts or cancels.
func (p *producer) fail(err error) {
	p.errors.Add(1)
	msg := err.Error()
	p.lastErr.Store(&msg)
}

// unit is what one producer goroutine inserts in turn: a job, or a
// scheduled job and then the unique duplicate that follows it (dup != 0).
type unit struct{ id, dup int64 }

// schedDelay draws a scheduled job's delay, uniformly in [MixSchedMin,
// p.schedMax].
func (p *producer) schedDelay() time.Duration {
	return MixSchedMin + rand.N(max(p.schedMax-MixSchedMin, 0)+1)
}

// enqueueUnit inserts one unit: plain jobs as without a mix, the others
// through the Mixer.
func (p *producer) enqueueUnit(ctx context.Context, u unit) {
	kind := kindOf(p.t.metaOf(u.id))
	if p.mixer == nil || kind == kindPlain || kind == kindFail || kind == kindSnooze {
		p.enqueue(ctx, []int64{u.id})
		return
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	job := Job{ID: u.id, Payload: payload}
	switch kind {
	case kindCancel:
		job.RunAt = time.Now().Add(MixCancelLead)
	default:
		job.RunAt = time.Now().Add(p.schedDelay())
	}
	if kind == kindUniqueOrig {
		job.UniqueKey = u.id
	}
	p.t.setRunAt(u.id, job.RunAt)
	ref, dup, err := p.mixer.EnqueueMix(ectx, job)
	inserted := time.Now()
	switch {
	case err != nil:
		p.t.markFailed([]int64{u.id})
		p.fail(err)
		if u.dup != 0 {
			p.t.markFailed([]int64{u.dup}) // never inserted
		}
		return
	case dup:
		// The original's key is its own id: nothing can block it.
		p.t.uniqueNotDeduped.Add(1)
		p.t.markDeduped(u.id)
	default:
		p.t.delayed.Add(1)
		p.t.markEnqueued([]int64{u.id})
	}
	switch {
	case kind == kindCancel:
		ok, res, err := p.mixer.Cancel(ectx, ref)
		switch {
		case err != nil:
			// Whether it was cancelled is unknown: neither lost nor
			// a defect if it runs or not.
			p.t.cancelMissed.Add(1)
			p.t.markFailed([]int64{u.id})
			p.fail(fmt.Errorf("cancel: %w", err))
		case ok:
			p.t.markCancelled(u.id)
		default:
			p.t.cancelMissed.Add(1)
			p.t.note(fmt.Sprintf("cancel missed (not a defect: the job is then expected to run): bench id %d, id %d: cancel returned %q %.1f ms after the insert returned, %.0f ms before its run_at",
				u.id, ref, res, time.Since(inserted).Seconds()*1000, time.Until(job.RunAt).Seconds()*1000))
		}
	case u.dup != 0:
		p.insertDup(ectx, u.dup, job, ref, dup)
	}
}

// insertDup inserts job id with the unique key of orig, a scheduled job
// just inserted (as ref; origDup: itself reported a duplicate): the insert
// must come back as a duplicate of ref.
func (p *producer) insertDup(ctx context.Context, id int64, orig Job, ref int64, origDup bool) {
	if origDup || time.Until(orig.RunAt) < 200*time.Millisecond {
		// No unfinished original to duplicate: not a test of anything.
		p.t.markInconclusive(id)
		return
	}
	job := Job{ID: id, Payload: payload, RunAt: orig.RunAt, UniqueKey: orig.UniqueKey}
	p.t.setRunAt(id, job.RunAt)
	began := time.Now()
	got, dup, err := p.mixer.EnqueueMix(ctx, job)
	took := time.Since(began)
	switch {
	case err != nil:
		p.t.markFailed([]int64{id})
		p.fail(err)
	case dup && got == ref:
		p.t.markDeduped(id)
	case !dup && p.t.metaOf(orig.ID)&flagDone != 0:
		// The original's work had finished when the insert returned: it
		// may have been finished when the insert looked, and then the
		// insert was right. Proves nothing.
		p.t.markInconclusive(id)
	default:
		// Stored although its original was unfinished (or reported as
		// the duplicate of another job): a defect; if it runs,
		// unique_dupes_run says so too.
		p.t.uniqueNotDeduped.Add(1)
		p.t.note(fmt.Sprintf("unique duplicate bench id %d (key %d): insert returned id %d duplicate=%v, original's id %d; the insert began %.0f ms before the original's run_at and took %.1f ms; the original had started %d times and not finished when it returned",
			id, orig.UniqueKey, got, dup, ref, orig.RunAt.Sub(began).Seconds()*1000, took.Seconds()*1000, p.t.runsOf(orig.ID)))
	}
}

// paced enqueues rate jobs per second on a fixed schedule counted from
// start, one job per autocommit statement, from conc goroutines. The
// schedule does not slow down when Postgres does: jobs that fall due while
// every goroutine is busy wait in a queue and count as offered when due.
func (p *producer) paced(ctx context.Context, start time.Time, rate float64, conc int) {
	due := make(chan unit, 1<<20)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range due {
				p.enqueueUnit(ctx, u)
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
	var orig int64 // a unique duplicate's original, held until the duplicate falls due
	defer func() {
		if orig != 0 { // the run ended between the two: the original goes alone
			due <- unit{id: orig}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			target := int64(now.Sub(start).Seconds() * rate)
			for ; sent < target; sent++ {
				k := kindPlain
				if p.mix != nil {
					k = p.mix.kind()
				}
				id := p.t.offer(k)
				u := unit{id: id}
				switch {
				case k == kindUniqueOrig:
					orig = id
					continue
				case k == kindUniqueDup:
					u, orig = unit{id: orig, dup: id}, 0
				}
				select {
				case due <- u:
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
// With a mix, each goroutine draws its jobs' kinds from a mixer of its own:
// plain, failing and snoozing jobs go in its batches, the others (a
// scheduled job, one to cancel, a unique job and its duplicate) one by one
// as the paced producer sends them.
//
// The bound holds with every goroutine sending: each reserves the jobs it
// is about to offer before it draws them, and waits while the backlog and
// the reservations exceed limit; a batch is at most a conc-th of limit.
// (A check of the backlog alone let each of 32 goroutines add a batch of
// 500 past it: a backlog of 18,000 rather than 2,000, which a loaded
// machine did not drain in the mix's drain time.)
func (p *producer) flat(ctx context.Context, conc int, limit int64) {
	batch := max(1, min(p.s.MaxBatch(), 500, int(limit)/conc))
	var reserved atomic.Int64
	var wg sync.WaitGroup
	for g := range conc {
		var mix *mixer
		if p.mix != nil {
			mix = newMixer(p.mix.m, uint64(time.Now().UnixNano())+uint64(g))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var orig int64 // a unique job, held until its duplicate is drawn
			defer func() {
				if orig != 0 { // the run ended between the two: the original goes alone
					p.enqueueUnit(ctx, unit{id: orig})
				}
			}()
			for ctx.Err() == nil {
				r := reserved.Add(int64(batch))
				if p.t.enqueued.Load()-p.t.completed.Load()-p.t.delayed.Load()+r > limit {
					reserved.Add(-int64(batch))
					time.Sleep(time.Millisecond)
					continue
				}
				ids := make([]int64, 0, batch)
				for range batch {
					k := kindPlain
					if mix != nil {
						k = mix.kind()
					}
					id := p.t.offer(k)
					switch k {
					case kindPlain, kindFail, kindSnooze:
						ids = append(ids, id)
					case kindUniqueOrig:
						orig = id
					case kindUniqueDup:
						p.enqueueUnit(ctx, unit{id: orig, dup: id})
						orig = 0
					default:
						p.enqueueUnit(ctx, unit{id: id})
					}
				}
				if len(ids) > 0 {
					p.enqueue(ctx, ids)
				}
				reserved.Add(-int64(batch))
			}
		}()
	}
	wg.Wait()
}

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
			b[i] = p.t.offer(kindPlain)
		}
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
