package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMixer is an in-memory Strategy and Mixer that records how the
// producer calls it: unique keys block while their job is stored (the
// fake runs nothing), and every call is checked against what the bench
// expects of it.
type fakeMixer struct {
	mu       sync.Mutex
	refs     int64
	keys     map[int64]int64 // unique key -> ref of the job holding it
	keyCall  map[int64]int   // unique key -> the EnqueueMix call that stored it
	refOf    map[int64]int64 // bench id -> ref
	idOf     map[int64]int64 // ref -> bench id
	calls    []int           // the number of jobs of each EnqueueMix call
	enqueues []int           // the number of jobs of each Enqueue call
	cancels  []int64         // bench ids cancelled, in order
	seen     map[int64]bool  // bench ids of every call
	problems []string

	// err, when set, is what every EnqueueMix call returns; store makes
	// it store a job whatever its key (a strategy whose unique jobs are
	// broken); done, when set, is called with each original it stores.
	err   error
	store bool
	done  func(id int64)
}

func newFakeMixer() *fakeMixer {
	return &fakeMixer{keys: map[int64]int64{}, keyCall: map[int64]int{}, refOf: map[int64]int64{}, idOf: map[int64]int64{}, seen: map[int64]bool{}}
}

func (f *fakeMixer) Name() string                               { return "fake" }
func (f *fakeMixer) Setup(context.Context, string) error        { return nil }
func (f *fakeMixer) Tables() []string                           { return nil }
func (f *fakeMixer) MaxBatch() int                              { return 1000 }
func (f *fakeMixer) Work(ctx context.Context, _ Env) error      { <-ctx.Done(); return nil }
func (f *fakeMixer) Remaining(context.Context) ([]int64, error) { return nil, nil }
func (f *fakeMixer) Close() error                               { return nil }

func (f *fakeMixer) Enqueue(_ context.Context, jobs []Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueues = append(f.enqueues, len(jobs))
	for _, j := range jobs {
		f.seen[j.ID] = true
		if !j.RunAt.IsZero() || j.UniqueKey != 0 {
			f.problems = append(f.problems, fmt.Sprintf("Enqueue got special job %d", j.ID))
		}
	}
	return nil
}

func (f *fakeMixer) EnqueueMix(_ context.Context, jobs []Job) ([]MixResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.calls)
	f.calls = append(f.calls, len(jobs))
	if len(jobs) > f.MaxBatch() {
		f.problems = append(f.problems, fmt.Sprintf("EnqueueMix of %d jobs, more than MaxBatch", len(jobs)))
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([]MixResult, len(jobs))
	for i, j := range jobs {
		f.seen[j.ID] = true
		if j.RunAt.IsZero() {
			f.problems = append(f.problems, fmt.Sprintf("EnqueueMix got job %d without a run_at", j.ID))
		}
		if j.UniqueKey != 0 {
			if ref, ok := f.keys[j.UniqueKey]; ok && !f.store {
				if f.keyCall[j.UniqueKey] == call {
					f.problems = append(f.problems, fmt.Sprintf("job %d inserted in the same call as its original %d", j.ID, j.UniqueKey))
				}
				out[i] = MixResult{Ref: ref, Duplicate: true}
				continue
			}
			if j.UniqueKey != j.ID && !f.store {
				f.problems = append(f.problems, fmt.Sprintf("duplicate %d inserted before its original %d was stored", j.ID, j.UniqueKey))
			}
		}
		f.refs++
		ref := f.refs + 1000
		f.refOf[j.ID], f.idOf[ref] = ref, j.ID
		if j.UniqueKey != 0 {
			if _, ok := f.keys[j.UniqueKey]; !ok {
				f.keys[j.UniqueKey], f.keyCall[j.UniqueKey] = ref, call
				if f.done != nil {
					f.done(j.ID)
				}
			}
		}
		out[i] = MixResult{Ref: ref}
	}
	return out, nil
}

func (f *fakeMixer) Cancel(_ context.Context, ref int64) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.idOf[ref]
	if !ok {
		f.problems = append(f.problems, fmt.Sprintf("cancel of %d, which no insert returned", ref))
		return false, "unknown", nil
	}
	f.cancels = append(f.cancels, id)
	return true, "cancelled", nil
}

// TestProducerBatchesMix runs the paced and the flat producer with the
// full mix against fakeMixer: the special jobs of a tick or a batch go in
// one EnqueueMix call, each unique duplicate in a later call than its
// original, each job to cancel is cancelled once it is stored; and the
// ledger is what one insert per job made it.
func TestProducerBatchesMix(t *testing.T) {
	m := Mix{Fail: 20, Snooze: 5, Cancel: 5, Sched: 20, Unique: 10}
	for _, mode := range []string{"paced", "flat"} {
		t.Run(mode, func(t *testing.T) {
			tr := newTracker(time.Now(), 1)
			f := newFakeMixer()
			p := &producer{s: f, t: tr, mix: newMixer(m, 1), mixer: f, schedMax: 2 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if mode == "paced" {
				p.paced(ctx, time.Now(), 20_000, 2)
			} else {
				p.flat(ctx, 2, 2000)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, s := range f.problems[:min(len(f.problems), 5)] {
				t.Error(s)
			}
			if e := p.errors.Load(); e != 0 {
				t.Errorf("%d errors: %s", e, *p.lastErr.Load())
			}

			var jobs, most int
			for _, n := range f.calls {
				jobs += n
				most = max(most, n)
			}
			// At 20 jobs a millisecond a tick holds about 5 originals;
			// a batch of 500 about 125.
			if len(f.calls) == 0 || jobs < 3*len(f.calls) || most < 5 {
				t.Errorf("%d special jobs in %d EnqueueMix calls (at most %d in one): not inserted in batches", jobs, len(f.calls), most)
			}
			plain := 0
			for _, n := range f.enqueues {
				plain += n
				if mode == "paced" && n != 1 {
					t.Errorf("the paced producer enqueued %d plain jobs in one call, want one per call", n)
					break
				}
			}
			t.Logf("%d offered; %d special jobs in %d EnqueueMix calls (at most %d); %d plain in %d Enqueue calls",
				tr.offered.Load(), jobs, len(f.calls), most, plain, len(f.enqueues))

			count := map[mixKind]int64{}
			var stored, delayed int64
			tr.each(func(id int64, c *chunk, k int64) {
				meta := c.meta[k].Load()
				kind := kindOf(meta)
				count[kind]++
				enq := c.enqueued[k].Load() > 0
				if c.failed[k].Load() {
					t.Errorf("job %d (%s) failed", id, kind)
				}
				switch kind {
				case kindUniqueDup:
					if meta&flagDeduped == 0 || meta&flagInconclusive != 0 || enq {
						t.Errorf("duplicate %d: meta %#x, enqueued %v; want de-duplicated", id, meta, enq)
					}
					return
				case kindCancel:
					if meta&flagCancelled == 0 {
						t.Errorf("job %d to cancel was not cancelled", id)
					}
				case kindSched, kindUniqueOrig:
					delayed++
				}
				if !enq {
					t.Errorf("job %d (%s) offered, never enqueued", id, kind)
				}
				if kind.delayed() && c.runAt[k].Load() == 0 {
					t.Errorf("job %d (%s) has no run_at", id, kind)
				}
				stored++
			})
			if len(f.cancels) != int(count[kindCancel]) {
				t.Errorf("%d cancels for %d jobs to cancel", len(f.cancels), count[kindCancel])
			}
			if got := tr.enqueued.Load(); got != stored {
				t.Errorf("enqueued %d, want %d", got, stored)
			}
			if got := tr.delayed.Load(); got != delayed {
				t.Errorf("delayed %d, want %d (the scheduled jobs and unique originals, not the cancelled ones)", got, delayed)
			}
			if got := tr.cancelled.Load(); got != count[kindCancel] {
				t.Errorf("cancelled %d, want %d", got, count[kindCancel])
			}
			if tr.uniqueNotDeduped.Load() != 0 || tr.uniqueSkipped.Load() != 0 || tr.cancelMissed.Load() != 0 {
				t.Errorf("unique not de-duplicated %d, skipped %d, cancel missed %d; want none", tr.uniqueNotDeduped.Load(), tr.uniqueSkipped.Load(), tr.cancelMissed.Load())
			}
			if count[kindUniqueDup] == 0 || count[kindCancel] == 0 || count[kindSched] == 0 {
				t.Errorf("too few jobs to tell: %v", count)
			}
		})
	}
}

// TestProducerMixVerdicts: a batch through the Mixer judges each unique
// duplicate as one insert did: stored while its original is unfinished is
// a defect (with a note), stored once its original finished is
// inconclusive; and an insert that fails marks the batch's jobs and their
// duplicates failed, one error for the call.
func TestProducerMixVerdicts(t *testing.T) {
	setup := func() (*tracker, *fakeMixer, *producer, []unit) {
		tr := newTracker(time.Now(), 1)
		f := newFakeMixer()
		p := &producer{s: f, t: tr, mixer: f, schedMax: 2 * time.Second}
		o1, d1 := tr.offer(kindUniqueOrig), tr.offer(kindUniqueDup)
		c, s := tr.offer(kindCancel), tr.offer(kindSched)
		o2, d2 := tr.offer(kindUniqueOrig), tr.offer(kindUniqueDup)
		return tr, f, p, []unit{{id: o1, dup: d1}, {id: c}, {id: s}, {id: o2, dup: d2}}
	}
	ctx := context.Background()

	t.Run("stored duplicates", func(t *testing.T) {
		tr, f, p, us := setup()
		f.store = true
		// The first original finishes as soon as it is stored.
		f.done = func(id int64) {
			if id == us[0].id {
				tr.started(id, time.Time{})
				tr.finished(id, 0)
			}
		}
		p.enqueueMix(ctx, us)
		if len(f.calls) != 2 || f.calls[0] != 4 || f.calls[1] != 2 {
			t.Errorf("EnqueueMix calls of %v jobs, want 4 then 2", f.calls)
		}
		if m := tr.metaOf(us[0].dup); m&flagInconclusive == 0 {
			t.Errorf("duplicate of a finished original stored: meta %#x, want inconclusive", m)
		}
		if m := tr.metaOf(us[3].dup); m&flagDeduped != 0 || tr.uniqueNotDeduped.Load() != 1 {
			t.Errorf("duplicate of an unfinished original stored: meta %#x, unique not de-duplicated %d; want a defect", m, tr.uniqueNotDeduped.Load())
		}
		if n := tr.notesNow(); len(n) != 1 || !strings.Contains(n[0], fmt.Sprintf("unique duplicate bench id %d", us[3].dup)) {
			t.Errorf("notes %q", n)
		}
		if tr.cancelled.Load() != 1 || tr.delayed.Load() != 2 {
			t.Errorf("cancelled %d, delayed %d; want 1, 2 (the unfinished original and the scheduled job)", tr.cancelled.Load(), tr.delayed.Load())
		}
	})

	t.Run("insert error", func(t *testing.T) {
		tr, f, p, us := setup()
		f.err = errors.New("boom")
		p.enqueueMix(ctx, us)
		for _, u := range us {
			for _, id := range []int64{u.id, u.dup} {
				if id != 0 && !tr.chunkOf(id).failed[id&(chunkSize-1)].Load() {
					t.Errorf("job %d not marked failed", id)
				}
			}
		}
		if len(f.calls) != 1 || p.errors.Load() != 1 || len(f.cancels) != 0 || tr.enqueued.Load() != 0 {
			t.Errorf("calls %v, errors %d, cancels %v, enqueued %d; want one call, one error, nothing else", f.calls, p.errors.Load(), f.cancels, tr.enqueued.Load())
		}
	})
}
