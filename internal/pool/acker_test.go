package pool

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// TestAcksOfAFencedBatchAreDropped: the process acks a job of a batch
// that was released and adopted by another process meanwhile, and a job of
// a batch it still holds. The flush drops the first ack and tells OnFenced
// of its batch; it writes the second, closes that batch, and OnAcked is
// told of that ack alone.
func TestAcksOfAFencedBatchAreDropped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lim := storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20}
	claim := func(owner int32, req int64) *storage.Batch {
		t.Helper()
		bs, err := e.store.Claim(ctx, "q", owner, req, false, lim)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1 || len(bs[0].Jobs) != 1 {
			t.Fatalf("claimed %+v, want one batch of one job", bs)
		}
		return bs[0]
	}
	lost := e.enqueue()
	b1 := claim(e.owner, 1)
	if n, err := e.store.Release(ctx, e.owner); err != nil || n != 1 {
		t.Fatalf("released %d batches (%v), want 1", n, err)
	}
	if adopted := claim(e.register(), 1); adopted.TickID != b1.TickID || adopted.Token <= b1.Token {
		t.Fatalf("the other process claimed batch %d token %d, want batch %d under a newer token than %d",
			adopted.TickID, adopted.Token, b1.TickID, b1.Token)
	}
	kept := e.enqueue()
	b2 := claim(e.owner, 2)

	var mu sync.Mutex
	var fenced []int64
	var acked []int64
	p := e.pool(Config{Queues: map[string]int{},
		OnFenced: func(tick int64) { mu.Lock(); fenced = append(fenced, tick); mu.Unlock() },
		OnAcked: func(acks []storage.Ack, _ time.Duration) {
			mu.Lock()
			for _, a := range acks {
				acked = append(acked, a.Job.ID)
			}
			mu.Unlock()
		}})
	stop := e.start(p)
	now := time.Now()
	for _, sb := range []*storage.Batch{b1, b2} {
		b := &batch{Batch: sb, owner: e.owner}
		b.remaining.Store(1)
		p.ack(b, storage.Ack{Batch: sb, Job: &sb.Jobs[0], State: storage.AckCompleted, Started: now, Finished: now})
	}
	e.waitFor("both acks flushed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(fenced) > 0 && len(acked) > 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fenced, []int64{b1.TickID}) {
		t.Errorf("OnFenced was told of batches %v, want [%d]", fenced, b1.TickID)
	}
	if !slices.Equal(acked, []int64{kept}) {
		t.Errorf("OnAcked was told of jobs %v, want [%d]", acked, kept)
	}
	if st := e.state(kept); st != "completed" {
		t.Errorf("the acked job of the batch still held is %q, want completed", st)
	}
	if st := e.state(lost); st == "completed" {
		t.Errorf("the acked job of the fenced batch is completed: its ack was written")
	}
	var done []int64
	rows, err := e.db.Query(ctx, "SELECT tick_id FROM millrace.done ORDER BY tick_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tick int64
		rows.Scan(&tick)
		done = append(done, tick)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if !slices.Equal(done, []int64{b2.TickID}) {
		t.Errorf("closed batches %v, want [%d] (the fenced one stays with its new holder)", done, b2.TickID)
	}
}

// TestAcksWithinTheFlushDelayShareOneFlush: the acker waits FlushDelay
// after the first pending ack and writes every ack queued by then, with
// the batches they close, in one flush.
func TestAcksWithinTheFlushDelayShareOneFlush(t *testing.T) {
	e := newEnv(t)
	const n = 5
	sb := e.claimNew(n)
	p := e.pool(Config{Queues: map[string]int{}, FlushDelay: time.Second})
	stop := e.start(p)
	b := &batch{Batch: sb, owner: e.owner}
	b.remaining.Store(n)
	now := time.Now()
	ack := func(j *storage.Job) {
		p.ack(b, storage.Ack{Batch: sb, Job: j, State: storage.AckCompleted, Started: now, Finished: now})
	}
	// The first ack is taken: the acker's delay runs. The others come
	// during it.
	ack(&sb.Jobs[0])
	e.waitFor("the acker to take the first ack", func() bool { return len(p.acks) == 0 })
	for i := 1; i < n; i++ {
		ack(&sb.Jobs[i])
	}
	for _, j := range sb.Jobs {
		e.waitFor("the job's ack", func() bool { return e.state(j.ID) == "completed" })
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	flushes := e.trace.calls("flush")
	if len(flushes) != 1 {
		t.Fatalf("%d flushes for %d acks queued within the flush delay, want 1", len(flushes), n)
	}
	if jobs, ticks := flushes[0].args[2].([]int64), flushes[0].args[18].([]int64); len(jobs) != n || !slices.Equal(ticks, []int64{sb.TickID}) {
		t.Fatalf("the flush wrote jobs %v and closed batches %v, want %d jobs and batch %d", jobs, ticks, n, sb.TickID)
	}
}

// TestAFlushWaitsLessForAKeyedEndOrASoonRetry: with a flush delay of an
// hour, the end of a job of a per-key limit whose key its claim left full
// is flushed within KeyFlushDelay (other processes see its key's slot
// free only then), and a retry by its due time (the schedule holds it
// only then).
func TestAFlushWaitsLessForAKeyedEndOrASoonRetry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.enqueue()
	e.enqueue()
	bs, err := e.store.Claim(ctx, "q", e.owner, 1, false, storage.Limits{MaxJobs: 2, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || len(bs[0].Jobs) != 2 {
		t.Fatalf("claimed %+v, want one batch of 2 jobs", bs)
	}
	sb := bs[0]
	p := e.pool(Config{Queues: map[string]int{}, FlushDelay: time.Hour, KeyFlushDelay: 5 * time.Millisecond})
	stop := e.start(p)
	defer stop()
	b := &batch{Batch: sb, owner: e.owner}
	b.remaining.Store(2)
	now := time.Now()
	keyed := sb.Jobs[0]
	keyed.Key, keyed.KeyFull = "customer:7", true
	p.ack(b, storage.Ack{Batch: sb, Job: &keyed, State: storage.AckCompleted, Started: now, Finished: now})
	e.waitFor("the keyed job's ack, long before the flush delay", func() bool { return e.state(keyed.ID) == "completed" })
	retried := &sb.Jobs[1]
	p.ack(b, storage.Ack{Batch: sb, Job: retried, State: storage.AckRetried, Err: "boom", Started: now, Finished: now,
		RetryAt: time.Now().Add(20 * time.Millisecond)})
	e.waitFor("the retry's flush, by its due time", func() bool { return len(e.trace.calls("flush")) >= 2 })
	flushes := e.trace.calls("flush")
	if len(flushes) != 2 {
		t.Fatalf("%d flushes, want 2 (one for each ack, each long before the flush delay)", len(flushes))
	}
	if jobs := flushes[1].args[2].([]int64); !slices.Equal(jobs, []int64{retried.ID}) {
		t.Fatalf("the second flush wrote jobs %v, want [%d]", jobs, retried.ID)
	}
}

// TestUnfenced: the acks of fenced batches are left out, the others kept
// in order.
func TestUnfenced(t *testing.T) {
	b := func(tick int64) *storage.Batch { return &storage.Batch{TickID: tick} }
	acks := []storage.Ack{{Batch: b(1), Err: "a"}, {Batch: b(2), Err: "b"}, {Batch: b(1), Err: "c"}, {Batch: b(3), Err: "d"}}
	var got []string
	for _, a := range unfenced(acks, []int64{1, 4}) {
		got = append(got, a.Err)
	}
	if !slices.Equal(got, []string{"b", "d"}) {
		t.Fatalf("kept %v, want [b d]", got)
	}
	if out := unfenced(acks, nil); len(out) != len(acks) {
		t.Fatalf("kept %d of %d acks with no batch fenced", len(out), len(acks))
	}
}

// TestOnlyAFullKeysEndHastensTheFlush: the end of a job of a per-key
// limit brings its flush forward to KeyFlushDelay only when its claim
// left the key's slots all held (another process may wait for one); a
// key with room waits for the flush delay, as a job without a key.
func TestOnlyAFullKeysEndHastensTheFlush(t *testing.T) {
	p := &Pool{cfg: Config{FlushDelay: time.Hour, KeyFlushDelay: 5 * time.Millisecond}}
	deadline := time.Now().Add(time.Hour)
	for _, c := range []struct {
		job    storage.Job
		sooner bool
	}{
		{storage.Job{ID: 1}, false},
		{storage.Job{ID: 2, Key: "a"}, false},
		{storage.Job{ID: 3, Key: "a", KeyFull: true}, true},
	} {
		got := p.flushBy(storage.Ack{Job: &c.job, State: storage.AckCompleted}, deadline)
		if sooner := got.Before(deadline.Add(-time.Minute)); sooner != c.sooner {
			t.Fatalf("job %+v: flush by %v (deadline %v); want sooner: %v", c.job, got, deadline, c.sooner)
		}
	}
}
