package bench

import (
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The tracker follows every job the bench enqueues by its id: when its
// enqueue committed and how many times its work started. Ids are dense
// (1, 2, 3, ...) so the state lives in fixed-size chunks of atomics that
// workers update without locks, however many jobs a run makes.
const (
	chunkBits = 16
	chunkSize = 1 << chunkBits
	maxChunks = 1 << 14 // 2^30 jobs per run
)

type chunk struct {
	enqueued [chunkSize]atomic.Int64  // ns since run start when the enqueue committed; 0 = not (yet) enqueued
	runs     [chunkSize]atomic.Uint32 // times the job's work started
	failed   [chunkSize]atomic.Bool   // the enqueue returned an error: the job may or may not exist
	side     [chunkSize]atomic.Bool   // a stall scenario job: in the ledger, not in the main stream's counters
}

// tracker is one strategy run's job ledger and counters.
type tracker struct {
	start  time.Time
	chunks [maxChunks]atomic.Pointer[chunk]
	grow   sync.Mutex
	nextID atomic.Int64

	offered, enqueued, completed, duplicates atomic.Int64

	// procs counts the completed jobs of each process (Job.Process).
	procs []atomic.Int64

	// pickup is the pickup latency a strategy's own library reports
	// (Env.ObservePickup); empty for the others.
	claim, e2e, pickup *recorder
	noE2E              bool // jobs were inserted before the run: no end-to-end latency
}

func newTracker(start time.Time, processes int) *tracker {
	return &tracker{start: start, claim: newRecorder(), e2e: newRecorder(), pickup: newRecorder(), procs: make([]atomic.Int64, max(processes, 1))}
}

// newID hands out the next job id.
func (t *tracker) newID() int64 { return t.nextID.Add(1) }

// newSideID hands out the id of a side job (the stall scenario's): the
// ledger follows it for lost and duplicated jobs, but it stays out of the
// offered, enqueued and completed counters and the latency histograms,
// which describe the main stream.
func (t *tracker) newSideID() int64 {
	id := t.newID()
	t.chunkOf(id).side[id&(chunkSize-1)].Store(true)
	return id
}

func (t *tracker) isSide(id int64) bool {
	if id <= 0 || id > t.nextID.Load() {
		return false
	}
	return t.chunkOf(id).side[id&(chunkSize-1)].Load()
}

// ran reports whether id's work has started.
func (t *tracker) ran(id int64) bool {
	if id <= 0 || id > t.nextID.Load() {
		return false
	}
	return t.chunkOf(id).runs[id&(chunkSize-1)].Load() > 0
}

// finished records that the work of job id, run by a worker of process
// proc, has finished.
func (t *tracker) finished(id int64, proc int) {
	if t.isSide(id) {
		return
	}
	t.completed.Add(1)
	if proc >= 0 && proc < len(t.procs) {
		t.procs[proc].Add(1)
	}
}

// perProcess returns the completed count of each process.
func (t *tracker) perProcess() []int64 {
	out := make([]int64, len(t.procs))
	for i := range t.procs {
		out[i] = t.procs[i].Load()
	}
	return out
}

func (t *tracker) chunkOf(id int64) *chunk {
	i := id >> chunkBits
	if c := t.chunks[i].Load(); c != nil {
		return c
	}
	t.grow.Lock()
	defer t.grow.Unlock()
	if c := t.chunks[i].Load(); c != nil {
		return c
	}
	c := new(chunk)
	t.chunks[i].Store(c)
	return c
}

// markEnqueued records that the enqueue of ids committed now.
func (t *tracker) markEnqueued(ids []int64) {
	now := int64(time.Since(t.start))
	if now < 1 {
		now = 1
	}
	n := int64(0)
	for _, id := range ids {
		c := t.chunkOf(id)
		c.enqueued[id&(chunkSize-1)].Store(now)
		if !c.side[id&(chunkSize-1)].Load() {
			n++
		}
	}
	t.enqueued.Add(n)
}

// markFailed records that the enqueue of ids returned an error: whether
// they committed is unknown, so they count neither as lost nor as enqueued.
func (t *tracker) markFailed(ids []int64) {
	for _, id := range ids {
		t.chunkOf(id).failed[id&(chunkSize-1)].Store(true)
	}
}

// started records the start of a job's work and its end-to-end latency.
func (t *tracker) started(id int64) {
	if id <= 0 || id > t.nextID.Load() {
		return
	}
	c := t.chunkOf(id)
	k := id & (chunkSize - 1)
	if c.runs[k].Add(1) > 1 {
		t.duplicates.Add(1)
	}
	if t.noE2E || c.side[k].Load() {
		return
	}
	if enq := c.enqueued[k].Load(); enq > 0 {
		t.e2e.observe(uint64(id), time.Duration(int64(time.Since(t.start))-enq))
	} else {
		// The worker saw the job before the producer returned from its
		// commit: the end-to-end latency is as small as it gets.
		t.e2e.observe(uint64(id), 0)
	}
}

// reconcile counts lost jobs: enqueued (committed) jobs whose work never
// started and that the strategy no longer stores.
func (t *tracker) reconcile(remaining []int64) (lost []int64) {
	left := make(map[int64]bool, len(remaining))
	for _, id := range remaining {
		left[id] = true
	}
	last := t.nextID.Load()
	for id := int64(1); id <= last; id++ {
		c := t.chunks[id>>chunkBits].Load()
		if c == nil {
			continue
		}
		k := id & (chunkSize - 1)
		if c.enqueued[k].Load() > 0 && c.runs[k].Load() == 0 && !left[id] && !c.failed[k].Load() {
			lost = append(lost, id)
		}
	}
	return lost
}

// recorder is a latency histogram that many goroutines record into:
// sharded so that workers rarely contend, drained once a second.
type recorder struct {
	next   atomic.Uint64
	shards [16]struct {
		mu sync.Mutex
		h  *hdr.Histogram
	}
}

// Histograms count microseconds from 1 µs to 1 h with 3 significant digits.
func newHist() *hdr.Histogram { return hdr.New(1, int64(time.Hour/time.Microsecond), 3) }

func newRecorder() *recorder {
	r := &recorder{}
	for i := range r.shards {
		r.shards[i].h = newHist()
	}
	return r
}

// observe records d; key spreads records over the shards (0 picks one).
func (r *recorder) observe(key uint64, d time.Duration) {
	if key == 0 {
		key = r.next.Add(1)
	}
	us := int64(d / time.Microsecond)
	us = min(max(us, 1), int64(time.Hour/time.Microsecond))
	s := &r.shards[key%uint64(len(r.shards))]
	s.mu.Lock()
	_ = s.h.RecordValue(us) // in range by the clamp above
	s.mu.Unlock()
}

// drain moves everything recorded since the last drain into into.
func (r *recorder) drain(into *hdr.Histogram) {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		into.Merge(s.h)
		s.h.Reset()
		s.mu.Unlock()
	}
}

// ms returns the q-th percentile of h in milliseconds, 0 when h is empty.
func ms(h *hdr.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return float64(h.ValueAtQuantile(q)) / 1000
}
