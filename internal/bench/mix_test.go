package bench

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseMix(t *testing.T) {
	good := map[string]Mix{
		"": {},
		"fail=20,snooze=5,cancel=5,sched=20,unique=10": {Fail: 20, Snooze: 5, Cancel: 5, Sched: 20, Unique: 10},
		" sched = 30 , unique=30 ":                     {Sched: 30, Unique: 30},
		"fail=100":                                     {Fail: 100},
		"cancel=0":                                     {},
	}
	for in, want := range good {
		got, err := ParseMix(in)
		if err != nil || got != want {
			t.Errorf("ParseMix(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseMix(got.String()); err != nil || back != got {
			t.Errorf("ParseMix(%q.String() = %q) = %+v, %v", in, got.String(), back, err)
		}
	}
	bad := map[string]string{
		"fial=20":                    `unknown key "fial"`,
		"fail=x":                     `fail="x": want a whole percentage`,
		"fail=12.5":                  `fail="12.5": want a whole percentage`,
		"fail=-1":                    `fail="-1"`,
		"fail=101":                   `fail="101"`,
		"fail":                       `"fail" is not KEY=PERCENT`,
		"fail=10,,snooze=5":          "empty entry",
		"fail=10,fail=5":             "fail given twice",
		"fail=60,sched=30,unique=20": "add up to 110, more than 100",
		"unique=10":                  "unique=10 is more than sched=0",
		"sched=5,unique=10":          "unique may not exceed sched",
	}
	for in, want := range bad {
		if _, err := ParseMix(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMix(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestMixBlock checks that every block of 100 jobs holds exactly the
// mix's shares and that each unique duplicate follows its original.
func TestMixBlock(t *testing.T) {
	m := Mix{Fail: 20, Snooze: 5, Cancel: 5, Sched: 20, Unique: 10}
	x := newMixer(m, 1)
	for b := range 5 {
		count := map[mixKind]int{}
		var prev mixKind
		for i := range 100 {
			k := x.kind()
			count[k]++
			if k == kindUniqueDup && (i == 0 || prev != kindUniqueOrig) {
				t.Fatalf("block %d: duplicate at %d after %v, not after its original", b, i, prev)
			}
			if prev == kindUniqueOrig && k != kindUniqueDup {
				t.Fatalf("block %d: original at %d not followed by its duplicate", b, i-1)
			}
			prev = k
		}
		want := map[mixKind]int{kindFail: 20, kindSnooze: 5, kindCancel: 5, kindSched: 10, kindUniqueOrig: 10, kindUniqueDup: 10, kindPlain: 40}
		for k, n := range want {
			if count[k] != n {
				t.Errorf("block %d: %d jobs of kind %d, want %d (%v)", b, count[k], k, n, count)
			}
		}
	}
	// A mix of 100% still fits a block: the originals are scheduled jobs.
	if got := len((Mix{Sched: 50, Unique: 50}).block(rand.New(rand.NewPCG(1, 2)))); got != 100 {
		t.Errorf("block of sched=50,unique=50 has %d jobs", got)
	}
}

// TestMixLedger drives the tracker as a --mix run would and checks the
// per-phase figures, the defects and the lost-job accounting.
func TestMixLedger(t *testing.T) {
	tr := newTracker(time.Now().Add(-time.Minute), 1)
	tr.setPhase(PhaseStress)
	plain, fail, snooze := tr.offer(kindPlain), tr.offer(kindFail), tr.offer(kindSnooze)
	cancel, missed := tr.offer(kindCancel), tr.offer(kindCancel)
	orig, dup := tr.offer(kindUniqueOrig), tr.offer(kindUniqueDup)
	sched, lost, lostRetry := tr.offer(kindSched), tr.offer(kindPlain), tr.offer(kindFail)
	tr.setRunAt(orig, time.Now().Add(-5*time.Millisecond))
	tr.setRunAt(sched, time.Now().Add(-20*time.Millisecond))
	tr.markEnqueued([]int64{plain, fail, snooze, cancel, missed, orig, sched, lost, lostRetry})
	tr.markCancelled(cancel)
	tr.markDeduped(dup)

	// As the bench's handler does: a failing or snoozing first run does
	// not finish.
	run := func(id int64) {
		n, k := tr.started(id, time.Now().Add(-3*time.Millisecond))
		if (k == kindFail || k == kindSnooze) && n == 1 {
			return
		}
		tr.finished(id, 0)
	}
	for _, id := range []int64{plain, fail, fail, snooze, snooze, missed, orig, sched, lostRetry} {
		run(id)
	}
	if n, k := tr.started(fail, time.Time{}); n != 3 || k != kindFail {
		t.Errorf("third start of the fail job: %d, %v", n, k)
	}
	ph := &tr.perPhase[phaseIndex[PhaseStress]]
	if got := ph.offered.Load(); got != 10 {
		t.Errorf("offered %d, want 10", got)
	}
	// Expected: 10 offered - 1 cancelled - 1 de-duplicated; completed:
	// plain, fail, snooze, missed (its cancel missed: it should run),
	// orig and sched; not lostRetry (only its failing first run).
	if c, d := ph.cancelled.Load(), ph.deduped.Load(); c != 1 || d != 1 {
		t.Errorf("cancelled %d, de-duplicated %d; want 1, 1", c, d)
	}
	if got := ph.completed.Load(); got != 6 {
		t.Errorf("completed %d, want 6 (every expected job that finished its final run, once)", got)
	}
	if got := tr.duplicates.Load(); got != 1 {
		t.Errorf("duplicates %d, want the fail job's third start", got)
	}
	if got := tr.pending(); got != 9-1-6 {
		t.Errorf("pending %d, want 2 (the lost ones)", got)
	}
	if got := tr.settle(); len(got) != 2 || got["plain ran 0"] != 1 || got["fail ran 1"] != 1 {
		t.Errorf("pending by kind %v, want the two lost jobs", got)
	}
	if ph.cancelledRun.Load() != 0 || ph.uniqueDupesRun.Load() != 0 {
		t.Errorf("defects before any: cancelled ran %d, dupes ran %d", ph.cancelledRun.Load(), ph.uniqueDupesRun.Load())
	}
	var late int64
	for i := range tr.schedLate.shards {
		late += tr.schedLate.shards[i].h.TotalCount()
	}
	if late != 2 {
		t.Errorf("%d scheduled latencies, want 2 (the scheduled job and the unique original)", late)
	}
	// lostRetry ran once (its failing attempt) and is gone: lost; lost never
	// ran; the cancelled job and the duplicate never ran and are not lost.
	got := tr.reconcile([]int64{})
	if len(got) != 2 || got[0] != lost || got[1] != lostRetry {
		t.Errorf("lost = %v, want [%d %d]", got, lost, lostRetry)
	}

	// The defects: a cancelled job that runs, a duplicate that runs, an
	// original that runs twice.
	run(cancel)
	run(dup)
	run(orig)
	inconclusive := tr.offer(kindUniqueDup)
	tr.markInconclusive(inconclusive)
	run(inconclusive)
	tr.settle()
	if c, d := ph.cancelledRun.Load(), ph.uniqueDupesRun.Load(); c != 1 || d != 2 {
		t.Errorf("cancelled ran %d, dupes ran %d; want 1, 2", c, d)
	}
	if got := ph.completed.Load(); got != 6 {
		t.Errorf("completed %d after defective runs, want still 6", got)
	}
}

func TestStartLogMost(t *testing.T) {
	l := &startLog{per: time.Second}
	t0 := time.Now()
	for _, ms := range []int{0, 100, 900, 999, 1000, 1500, 1999, 2000, 2001} {
		l.add(t0.Add(time.Duration(ms) * time.Millisecond))
	}
	// [900, 1900): 900, 999, 1000, 1500; [1000, 2000): 1000, 1500, 1999 ...
	if got := l.most(); got != 4 {
		t.Fatalf("most = %d; want 4", got)
	}
	if (&startLog{}).most() != 0 {
		t.Fatal("an empty log has a start")
	}
}
