package bench

import (
	"fmt"
	"slices"
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
	meta     [chunkSize]atomic.Uint32 // mix kind (bits 0-7), phase offered in (8-15), flag* bits
	runAt    [chunkSize]atomic.Int64  // ns since run start when a scheduled job is due
	// last is, in the chaos scenario, when the job's newest run started
	// (ns since run start, shifted left 8 bits) and in which process (the
	// low 8 bits); 0 elsewhere.
	last [chunkSize]atomic.Int64
}

// Flags in chunk.meta.
const (
	flagCancelled = 1 << 16 // cancelled while it waited: must never run
	flagDeduped   = 1 << 17 // inserted as a unique duplicate and reported as one: must never run
	flagDone      = 1 << 18 // its final, successful run finished (counted once)
	// flagInconclusive marks a unique duplicate whose test proves nothing
	// (its original was about to fall due, or had finished when the
	// duplicate's insert returned): left out like a de-duplicated one.
	flagInconclusive = 1 << 19
	// flagCrashRerun marks a job run again after a crash window (the
	// chaos scenario): a unique original that ran twice so is no defect.
	flagCrashRerun = 1 << 20
)

// phaseIndex numbers the phases for the per-phase counters.
var phaseIndex = map[string]int{PhaseWarmup: 0, PhaseClean: 1, PhaseStress: 2, PhaseRecovery: 3, PhaseBurndown: 4}

const numPhases = 5

// phaseCounts are the jobs offered in one phase and what became of them,
// counted by the phase the job was offered in (not the one it ran in).
type phaseCounts struct {
	offered, cancelled, deduped, completed atomic.Int64
	cancelledRun, uniqueDupesRun           atomic.Int64
}

// tracker is one strategy run's job ledger and counters.
type tracker struct {
	// delayed counts the jobs stored to run later (scheduled, unique
	// originals, jobs to cancel) that have neither run nor been
	// cancelled: a producer at full speed leaves them out of its backlog.
	delayed atomic.Int64

	start  time.Time
	chunks [maxChunks]atomic.Pointer[chunk]
	grow   sync.Mutex
	nextID atomic.Int64

	offered, enqueued, completed, duplicates atomic.Int64

	// The mix (--mix): the phase jobs are offered in now, the counts per
	// phase, and what went wrong on the way.
	phase     atomic.Int32
	perPhase  [numPhases]phaseCounts
	cancelled atomic.Int64 // jobs cancelled while waiting: out of the backlog
	done      atomic.Int64 // main jobs whose final run finished, each once
	// cancelMissed counts Cancel calls that did not cancel a waiting job
	// (the job is then expected to run); uniqueNotDeduped inserts with the
	// key of an unfinished job that were not reported as its duplicate;
	// uniqueSkipped duplicates not inserted because their original was
	// about to fall due; schedEarly scheduled jobs that started before
	// their run_at.
	cancelMissed, uniqueNotDeduped, uniqueSkipped, schedEarly atomic.Int64

	// crash is set in the chaos scenario: the windows in which a process
	// was killed, stopped or crashed. A job run again whose previous run
	// started in such a window, in that process, is counted in
	// crashDuplicates as well as in duplicates.
	crash           *crashLog
	crashDuplicates atomic.Int64
	// suspects are the duplicates whose previous run was in no crash
	// window when they ran again: a window may still open for it (a
	// process that learns late that its lease ran out); settleDuplicates
	// decides them at the end.
	suspectsMu sync.Mutex
	suspects   []suspect

	notesMu sync.Mutex
	notes   []string // the first defects of a --mix run, described

	// procs counts the completed jobs of each process (Job.Process).
	procs []atomic.Int64

	// pickup is the pickup latency a strategy's own library reports
	// (Env.ObservePickup); empty for the others.
	claim, e2e, pickup *recorder
	// schedLate is a scheduled job's start minus its run_at; retryLate a
	// failed or snoozed job's second start minus when the strategy made it
	// ready again (Job.ReadyAt).
	schedLate, retryLate *recorder
	noE2E                bool // jobs were inserted before the run: no end-to-end latency
}

func newTracker(start time.Time, processes int) *tracker {
	return &tracker{start: start, claim: newRecorder(), e2e: newRecorder(), pickup: newRecorder(), schedLate: newRecorder(), retryLate: newRecorder(),
		procs: make([]atomic.Int64, max(processes, 1))}
}

// setPhase makes phase the one newly offered jobs are counted in.
func (t *tracker) setPhase(phase string) { t.phase.Store(int32(phaseIndex[phase])) }

// offer hands out the id of a main-stream job of kind k, offered now, in
// the current phase.
func (t *tracker) offer(k mixKind) int64 {
	id := t.newID()
	ph := t.phase.Load()
	t.chunkOf(id).meta[id&(chunkSize-1)].Store(uint32(k) | uint32(ph)<<8)
	t.offered.Add(1)
	t.perPhase[ph].offered.Add(1)
	return id
}

func (t *tracker) metaOf(id int64) uint32 { return t.chunkOf(id).meta[id&(chunkSize-1)].Load() }

func kindOf(meta uint32) mixKind { return mixKind(meta & 0xff) }

func phaseOf(meta uint32) int { return int(meta >> 8 & 0xff) }

// each calls fn with every job id the tracker has given out, its chunk
// and its index in the chunk.
func (t *tracker) each(fn func(id int64, c *chunk, k int64)) {
	last := t.nextID.Load()
	for id := int64(1); id <= last; id++ {
		if c := t.chunks[id>>chunkBits].Load(); c != nil {
			fn(id, c, id&(chunkSize-1))
		}
	}
}

// suspect is a run again whose previous run was in no crash window yet.
type suspect struct {
	id       int64
	n        uint32
	proc     int
	at       time.Duration
	prevProc int
	prevAt   time.Duration
	kind     mixKind
	meta     *atomic.Uint32
	settled  bool
}

// settleDuplicates decides the suspects once every window is known: a
// run again whose previous run a window now covers is a crash duplicate;
// the others are described (notes). It is idempotent.
func (t *tracker) settleDuplicates() {
	t.suspectsMu.Lock()
	defer t.suspectsMu.Unlock()
	for i := range t.suspects {
		s := &t.suspects[i]
		if s.settled {
			continue
		}
		s.settled = true
		if t.crash.covers(s.prevProc, s.prevAt) {
			t.crashDuplicates.Add(1)
			s.meta.Or(flagCrashRerun)
			continue
		}
		t.note(fmt.Sprintf("job %d (%s) ran again (run %d) in process %d at %.1fs; its previous run started in process %d at %.1fs",
			s.id, s.kind, s.n, s.proc, s.at.Seconds(), s.prevProc, s.prevAt.Seconds()))
	}
}

// notesNow is a copy of the notes so far.
func (t *tracker) notesNow() []string {
	t.notesMu.Lock()
	defer t.notesMu.Unlock()
	return slices.Clone(t.notes)
}

// note keeps the description of a defect (the first 20).
func (t *tracker) note(s string) {
	t.notesMu.Lock()
	defer t.notesMu.Unlock()
	if len(t.notes) < 20 {
		t.notes = append(t.notes, s)
	}
}

func (t *tracker) runsOf(id int64) uint32 { return t.chunkOf(id).runs[id&(chunkSize-1)].Load() }

// setRunAt records when scheduled job id is due.
func (t *tracker) setRunAt(id int64, at time.Time) {
	t.chunkOf(id).runAt[id&(chunkSize-1)].Store(max(int64(at.Sub(t.start)), 1))
}

// markCancelled records that job id was cancelled while it waited.
func (t *tracker) markCancelled(id int64) {
	m := t.chunkOf(id).meta[id&(chunkSize-1)].Or(flagCancelled)
	if m&flagCancelled == 0 && kindOf(m).delayed() {
		t.delayed.Add(-1)
	}
	t.cancelled.Add(1)
	t.perPhase[phaseOf(m)].cancelled.Add(1)
}

// markDeduped records that the insert of job id was reported as the
// duplicate of its unique original: nothing was stored.
func (t *tracker) markDeduped(id int64) {
	m := t.chunkOf(id).meta[id&(chunkSize-1)].Or(flagDeduped)
	t.perPhase[phaseOf(m)].deduped.Add(1)
}

// markInconclusive records that unique duplicate id tested nothing: it
// is left out of what should run, and whether it runs is no defect.
func (t *tracker) markInconclusive(id int64) {
	m := t.chunkOf(id).meta[id&(chunkSize-1)].Or(flagDeduped | flagInconclusive)
	t.perPhase[phaseOf(m)].deduped.Add(1)
	t.uniqueSkipped.Add(1)
}

// runsWanted is how many times job id should start, as far as the bench
// knows now: 0 for a job cancelled or inserted as a duplicate.
func runsWanted(meta uint32) uint32 {
	if meta&(flagCancelled|flagDeduped) != 0 {
		return 0
	}
	return kindOf(meta).runsWanted()
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
		t.chunkOf(id).meta[id&(chunkSize-1)].Or(flagDone)
		return
	}
	t.completed.Add(1)
	if proc >= 0 && proc < len(t.procs) {
		t.procs[proc].Add(1)
	}
	c := t.chunkOf(id)
	k := id & (chunkSize - 1)
	if meta := c.meta[k].Load(); runsWanted(meta) == 0 || meta&flagDone != 0 {
		return // a run that should not have happened, or a repeat
	}
	if old := c.meta[k].Or(flagDone); old&flagDone == 0 {
		t.done.Add(1)
		t.perPhase[phaseOf(old)].completed.Add(1)
		if kindOf(old).delayed() {
			t.delayed.Add(-1)
		}
	}
}

// pending is the number of main jobs enqueued, not cancelled, whose final
// run has not finished yet.
func (t *tracker) pending() int64 { return t.enqueued.Load() - t.cancelled.Load() - t.done.Load() }

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

// started records the start of a job's work, its latencies and the
// defects a start can show, and returns how many times the job has started
// (this start included) and its kind.
func (t *tracker) started(id int64, readyAt time.Time) (uint32, mixKind) {
	return t.startedIn(id, readyAt, -1)
}

// startedIn is started for a run in process proc (-1: not known), which
// the chaos scenario records to tell a run again after a crash from a
// duplicate.
func (t *tracker) startedIn(id int64, readyAt time.Time, proc int) (uint32, mixKind) {
	if id <= 0 || id > t.nextID.Load() {
		return 0, kindPlain
	}
	c := t.chunkOf(id)
	k := id & (chunkSize - 1)
	var prev int64
	if t.crash != nil && proc >= 0 {
		prev = c.last[k].Swap(max(int64(time.Since(t.start)), 1)<<8 | int64(proc&0xff))
	}
	n := c.runs[k].Add(1)
	meta := c.meta[k].Load()
	kind := kindOf(meta)
	if want := runsWanted(meta); want > 0 && n == want+1 {
		t.duplicates.Add(1)
		if prev != 0 && t.crash.covers(int(prev&0xff), time.Duration(prev>>8)) {
			t.crashDuplicates.Add(1)
			c.meta[k].Or(flagCrashRerun)
		} else if t.crash != nil {
			t.suspectsMu.Lock()
			t.suspects = append(t.suspects, suspect{id: id, n: n, proc: proc, at: time.Since(t.start), prevProc: int(prev & 0xff),
				prevAt: time.Duration(prev >> 8), kind: kind, meta: &c.meta[k]})
			t.suspectsMu.Unlock()
		}
	}
	if c.side[k].Load() {
		return n, kind
	}
	now := int64(time.Since(t.start))
	ph := &t.perPhase[phaseOf(meta)]
	switch {
	case kind == kindCancel && meta&flagCancelled != 0 && n == 1:
		ph.cancelledRun.Add(1)
		t.note(fmt.Sprintf("cancelled job bench id %d ran, %.0f ms after its run_at", id, float64(now-c.runAt[k].Load())/1e6))
	}
	switch {
	case t.noE2E:
	case kind.scheduled() && n == 1:
		at := c.runAt[k].Load()
		if at > 0 && now < at-int64(time.Millisecond) {
			t.schedEarly.Add(1)
		}
		if at > 0 {
			t.schedLate.observe(uint64(id), time.Duration(now-at))
		}
	case (kind == kindFail || kind == kindSnooze) && n == 2:
		if !readyAt.IsZero() {
			t.retryLate.observe(uint64(id), time.Since(readyAt))
		}
	case n == 1 && !kind.scheduled() && kind != kindUniqueDup:
		if enq := c.enqueued[k].Load(); enq > 0 {
			t.e2e.observe(uint64(id), time.Duration(now-enq))
		} else {
			// The worker saw the job before the producer returned from its
			// commit: the end-to-end latency is as small as it gets.
			t.e2e.observe(uint64(id), 0)
		}
	}
	return n, kind
}

// settle counts, once the workers have stopped, the unique duplicates
// that ran (unless their test was inconclusive) and the originals that ran
// twice, in unique_dupes_run of the phase they were offered in: a
// duplicate's verdict may come after it ran, so it is made at the end. It
// returns the main jobs that should have run and have not completed, by
// kind and number of starts ("fail ran 1"), for the summary.
func (t *tracker) settle() map[string]int64 {
	t.settleDuplicates()
	pending := map[string]int64{}
	t.each(func(id int64, c *chunk, k int64) {
		if c.side[k].Load() {
			return
		}
		meta, runs := c.meta[k].Load(), c.runs[k].Load()
		kind := kindOf(meta)
		if kind == kindUniqueDup && runs > 0 && meta&flagInconclusive == 0 || kind == kindUniqueOrig && runs > 1 && meta&flagCrashRerun == 0 {
			t.perPhase[phaseOf(meta)].uniqueDupesRun.Add(1)
		}
		if runsWanted(meta) > 0 && meta&flagDone == 0 && c.enqueued[k].Load() > 0 && !c.failed[k].Load() {
			pending[fmt.Sprintf("%s ran %d", kind, runs)]++
		}
	})
	return pending
}

// reconcile counts lost jobs: enqueued (committed) jobs whose work never
// started (for a job that fails or snoozes once, never started a second
// time) and that the strategy no longer stores. Cancelled jobs and unique
// duplicates are not expected to run and are never lost.
func (t *tracker) reconcile(remaining []int64) (lost []int64) {
	left := make(map[int64]bool, len(remaining))
	for _, id := range remaining {
		left[id] = true
	}
	t.each(func(id int64, c *chunk, k int64) {
		want := runsWanted(c.meta[k].Load())
		if want > 0 && c.enqueued[k].Load() > 0 && c.runs[k].Load() < want && !left[id] && !c.failed[k].Load() {
			lost = append(lost, id)
		}
	})
	return lost
}

// unfinished returns the jobs that should have finished and have not:
// enqueued (committed), not cancelled nor a duplicate, whose final run has
// not finished (a job that crashes its process, kindPoison, once it has
// run at all). With remaining (the jobs the strategy still stores) it is
// the chaos scenario's lost jobs: those no longer stored; keep, when not
// nil, limits it to the jobs it accepts (its id and meta).
func (t *tracker) unfinished(remaining []int64, keep func(id int64, enqueued time.Duration, meta uint32) bool) (out []int64) {
	var left map[int64]bool
	if remaining != nil {
		left = make(map[int64]bool, len(remaining))
		for _, id := range remaining {
			left[id] = true
		}
	}
	t.each(func(id int64, c *chunk, k int64) {
		meta, enq := c.meta[k].Load(), c.enqueued[k].Load()
		if runsWanted(meta) == 0 || enq == 0 || c.failed[k].Load() || left[id] {
			return
		}
		if kindOf(meta) == kindPoison {
			if c.runs[k].Load() > 0 {
				return
			}
		} else if meta&flagDone != 0 {
			return
		}
		if keep == nil || keep(id, time.Duration(enq), meta) {
			out = append(out, id)
		}
	})
	return out
}

// crashLog holds the windows of the chaos scenario's process faults.
type crashLog struct {
	mu      sync.Mutex
	windows []crashWindow
}

// crashWindow: a run of process proc that started from from to to (since
// the run's start) may be cut short by the fault.
type crashWindow struct {
	proc     int
	from, to time.Duration
}

func (l *crashLog) add(proc int, from, to time.Duration) {
	l.mu.Lock()
	l.windows = append(l.windows, crashWindow{proc, from, to})
	l.mu.Unlock()
}

func (l *crashLog) covers(proc int, at time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.windows {
		if w.proc == proc && at >= w.from && at <= w.to {
			return true
		}
	}
	return false
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
