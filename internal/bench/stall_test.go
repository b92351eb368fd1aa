package bench

import (
	"testing"
	"time"
)

// TestSideJobs checks the stall scenario's jobs in the ledger: counted as
// lost or duplicated like any job, but left out of the main stream's
// enqueued and completed counters, its latency and the per-process counts.
func TestSideJobs(t *testing.T) {
	tr := newTracker(time.Now(), 2)
	main, side, lost, twice := tr.newID(), tr.newSideID(), tr.newSideID(), tr.newSideID()
	tr.markEnqueued([]int64{main, side, lost, twice})
	if got := tr.enqueued.Load(); got != 1 {
		t.Errorf("enqueued = %d, want 1 (side jobs are not counted)", got)
	}
	for _, id := range []int64{main, side, twice, twice} {
		tr.started(id, time.Time{})
		tr.finished(id, 1)
	}
	if got := tr.completed.Load(); got != 1 {
		t.Errorf("completed = %d, want 1", got)
	}
	if got := tr.perProcess(); got[0] != 0 || got[1] != 1 {
		t.Errorf("per process = %v, want [0 1]", got)
	}
	if got := tr.duplicates.Load(); got != 1 {
		t.Errorf("duplicates = %d, want the side job worked twice", got)
	}
	if !tr.ran(side) || tr.ran(lost) {
		t.Errorf("ran: side %v, lost %v", tr.ran(side), tr.ran(lost))
	}
	if got := tr.reconcile(nil); len(got) != 1 || got[0] != lost {
		t.Errorf("lost = %v, want [%d]", got, lost)
	}
	if got := tr.reconcile([]int64{lost}); len(got) != 0 {
		t.Errorf("a side job still stored counted as lost: %v", got)
	}
	var e2e int64
	for i := range tr.e2e.shards {
		e2e += tr.e2e.shards[i].h.TotalCount()
	}
	if e2e != 1 {
		t.Errorf("%d end-to-end latencies recorded, want the main job's only", e2e)
	}
}
