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
	// limit is --limit: under a per-key limit each job gets its key.
	limit Limit

	errors  atomic.Int64
	lastErr atomic.Pointer[string]
}

// job is the bench job id, with its key under a per-key limit.
func (p *producer) job(id int64) Job {
	j := Job{ID: id, Payload: payload}
	if k := p.limit.KeyOf(id); k != 0 {
		j.Key, j.KeyArg = k, p.limit.Key
	}
	return j
}

// enqueue stores ids and records the outcome. A call in flight when ctx is
// cancelled still completes, so that whether its jobs exist is known.
func (p *producer) enqueue(ctx context.Context, ids []int64) {
	jobs := make([]Job, len(ids))
	for i, id := range ids {
		jobs[i] = p.job(id)
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

// unit is a job the producer inserts, or a scheduled job and then the
// unique duplicate that follows it once it is stored (dup != 0).
type unit struct{ id, dup int64 }

// schedDelay draws a scheduled job's delay, uniformly in [MixSchedMin,
// p.schedMax].
func (p *producer) schedDelay() time.Duration {
	return MixSchedMin + rand.N(max(p.schedMax-MixSchedMin, 0)+1)
}

// special reports whether a job of kind k goes through the Mixer: without
// a mix every job is plain, and failing and snoozing jobs are stored as
// plain ones (their handler makes them special).
func (p *producer) special(k mixKind) bool {
	return p.mixer != nil && k != kindPlain && k != kindFail && k != kindSnooze
}

// enqueueUnits inserts units: plain jobs (and failing and snoozing ones)
// in one Enqueue call as without a mix, the others in batches through the
// Mixer (enqueueMix).
func (p *producer) enqueueUnits(ctx context.Context, us []unit) {
	var ids []int64
	var specials []unit
	for _, u := range us {
		if p.special(kindOf(p.t.metaOf(u.id))) {
			specials = append(specials, u)
		} else {
			ids = append(ids, u.id)
		}
	}
	if len(ids) > 0 {
		p.enqueue(ctx, ids)
	}
	if len(specials) > 0 {
		p.enqueueMix(ctx, specials)
	}
}

// enqueueMix inserts special units (scheduled jobs, unique originals,
// jobs to cancel) through the Mixer, in batches of at most MaxBatch: each
// batch's jobs in one EnqueueMix call, then the unique duplicates of its
// originals in a second one (once the originals are stored), then its
// cancels.
func (p *producer) enqueueMix(ctx context.Context, us []unit) {
	n := max(p.s.MaxBatch(), 1)
	for len(us) > 0 {
		k := min(len(us), n)
		p.enqueueMixBatch(ctx, us[:k])
		us = us[k:]
	}
}

// enqueueMixBatch inserts one batch of special units (enqueueMix) and
// records what became of each job.
func (p *producer) enqueueMixBatch(ctx context.Context, us []unit) {
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	jobs := make([]Job, len(us))
	kinds := make([]mixKind, len(us))
	for i, u := range us {
		kinds[i] = kindOf(p.t.metaOf(u.id))
		job := p.job(u.id)
		switch kinds[i] {
		case kindCancel:
			job.RunAt = time.Now().Add(MixCancelLead)
		default:
			job.RunAt = time.Now().Add(p.schedDelay())
		}
		if kinds[i] == kindUniqueOrig {
			job.UniqueKey = u.id
		}
		p.t.setRunAt(u.id, job.RunAt)
		jobs[i] = job
	}
	res, err := p.mixer.EnqueueMix(ectx, jobs)
	inserted := time.Now()
	if err == nil && len(res) != len(jobs) {
		err = fmt.Errorf("EnqueueMix returned %d results for %d jobs", len(res), len(jobs))
	}
	if err != nil {
		for _, u := range us {
			p.t.markFailed([]int64{u.id})
			if u.dup != 0 {
				p.t.markFailed([]int64{u.dup}) // never inserted
			}
		}
		p.fail(err)
		return
	}
	stored := make([]int64, 0, len(us))
	for i, r := range res {
		if r.Duplicate {
			// The original's key is its own id: nothing can block it.
			p.t.uniqueNotDeduped.Add(1)
			p.t.markDeduped(us[i].id)
			continue
		}
		stored = append(stored, us[i].id)
	}
	p.t.delayed.Add(int64(len(stored)))
	p.t.markEnqueued(stored)
	p.insertDups(ectx, us, jobs, res)
	for i, u := range us {
		if kinds[i] != kindCancel {
			continue
		}
		ref := res[i].Ref
		ok, what, err := p.mixer.Cancel(ectx, ref)
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
				u.id, ref, what, time.Since(inserted).Seconds()*1000, time.Until(jobs[i].RunAt).Seconds()*1000))
		}
	}
}

// insertDups inserts, in one EnqueueMix call, the unique duplicates of the
// units of a batch just inserted (origs[i] as res[i]) that have one: each
// with the unique key of its original, which must come back as a
// duplicate of the original's reference.
func (p *producer) insertDups(ctx context.Context, us []unit, origs []Job, res []MixResult) {
	var dups []Job
	var of []int // of[k] is the index in us of dups[k]'s original
	for i, u := range us {
		if u.dup == 0 {
			continue
		}
		if res[i].Duplicate || time.Until(origs[i].RunAt) < 200*time.Millisecond {
			// No unfinished original to duplicate: not a test of anything.
			p.t.markInconclusive(u.dup)
			continue
		}
		job := p.job(u.dup)
		job.RunAt, job.UniqueKey = origs[i].RunAt, origs[i].UniqueKey
		p.t.setRunAt(u.dup, job.RunAt)
		dups = append(dups, job)
		of = append(of, i)
	}
	if len(dups) == 0 {
		return
	}
	began := time.Now()
	got, err := p.mixer.EnqueueMix(ctx, dups)
	took := time.Since(began)
	if err == nil && len(got) != len(dups) {
		err = fmt.Errorf("EnqueueMix returned %d results for %d jobs", len(got), len(dups))
	}
	if err != nil {
		for _, d := range dups {
			p.t.markFailed([]int64{d.ID})
		}
		p.fail(err)
		return
	}
	for k, d := range dups {
		orig, ref, g := origs[of[k]], res[of[k]].Ref, got[k]
		switch {
		case g.Duplicate && g.Ref == ref:
			p.t.markDeduped(d.ID)
		case !g.Duplicate && p.t.metaOf(orig.ID)&flagDone != 0:
			// The original's work had finished when the insert returned: it
			// may have been finished when the insert looked, and then the
			// insert was right. Proves nothing.
			p.t.markInconclusive(d.ID)
		default:
			// Stored although its original was unfinished (or reported as
			// the duplicate of another job): a defect; if it runs,
			// unique_dupes_run says so too.
			p.t.uniqueNotDeduped.Add(1)
			p.t.note(fmt.Sprintf("unique duplicate bench id %d (key %d): insert returned id %d duplicate=%v, original's id %d; the insert (of %d duplicates) began %.0f ms before the original's run_at and took %.1f ms; the original had started %d times and not finished when it returned",
				d.ID, orig.UniqueKey, g.Ref, g.Duplicate, ref, len(dups), orig.RunAt.Sub(began).Seconds()*1000, took.Seconds()*1000, p.t.runsOf(orig.ID)))
		}
	}
}

// paced enqueues rate jobs per second on a fixed schedule counted from
// start, from conc goroutines: plain jobs (and failing and snoozing ones)
// one per autocommit statement, and with a mix the special jobs that fall
// due in one tick of the schedule (a millisecond, or more when the
// producer falls behind) together, in one batch through the Mixer. The
// schedule does not slow down when Postgres does: jobs that fall due while
// every goroutine is busy wait in a queue and count as offered when due.
// When ctx ends it offers no more, and every job it offered is inserted
// before it returns (its goroutines' inserts complete regardless of ctx).
func (p *producer) paced(ctx context.Context, start time.Time, rate float64, conc int) {
	due := make(chan []unit, 1<<20)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for us := range due {
				p.enqueueUnits(ctx, us)
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
			due <- []unit{{id: orig}}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			target := int64(now.Sub(start).Seconds() * rate)
			var specials []unit // the tick's special jobs, sent together at its end
			// Nothing is offered once the run has ended, and every job
			// offered is sent, the run ended or not: the goroutines take
			// from due until it is closed, so a send waits only while due
			// is full, as the inserts the run's end waits for anyway.
			for ; sent < target && ctx.Err() == nil; sent++ {
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
				if p.special(kindOf(p.t.metaOf(u.id))) {
					specials = append(specials, u)
					continue
				}
				due <- []unit{u}
			}
			if len(specials) > 0 {
				due <- specials
			}
		}
	}
}

// flat enqueues as fast as the strategy keeps up: batches of up to
// MaxBatch jobs from conc goroutines, pausing while the backlog exceeds
// limit so that the run measures throughput, not an ever-growing table.
// With a mix, each goroutine draws its jobs' kinds from a mixer of its own:
// plain, failing and snoozing jobs go in its batches through Enqueue, the
// others (scheduled jobs, jobs to cancel, unique jobs and their
// duplicates) drawn for the same batch in a batch of their own through
// the Mixer (enqueueMix), a unique job drawn last held for the next batch,
// where its duplicate is drawn.
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
					p.enqueueMix(ctx, []unit{{id: orig}})
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
				var specials []unit
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
						specials = append(specials, unit{id: orig, dup: id})
						orig = 0
					default:
						specials = append(specials, unit{id: id})
					}
				}
				if len(ids) > 0 {
					p.enqueue(ctx, ids)
				}
				if len(specials) > 0 {
					p.enqueueMix(ctx, specials)
				}
				reserved.Add(-int64(batch))
			}
		}()
	}
	wg.Wait()
}

// hot inserts n jobs of the hot key (--limit hot=N), bench ids -1 to -n
// (the tracker counts none of them), in batches, calling progress with
// how many are stored.
func (p *producer) hot(ctx context.Context, n int64, progress func(done int64)) error {
	batch := int64(max(p.s.MaxBatch(), 1))
	for done := int64(0); done < n; {
		k := min(batch, n-done)
		jobs := make([]Job, k)
		for i := range jobs {
			jobs[i] = p.job(-(done + int64(i) + 1))
		}
		if err := p.s.Enqueue(ctx, jobs); err != nil {
			return err
		}
		done += k
		progress(done)
	}
	return nil
}

// bulk inserts n plain jobs in batches from two goroutines, calling
// progress with how many are stored.
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
