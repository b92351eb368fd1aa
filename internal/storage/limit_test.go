package storage

import (
	"context"
	"testing"
	"time"
)

// TestLimitIsExactAcrossProcesses: a queue's running limit caps what the
// claims of every process take together. A process's count stands until
// its next claim (a finished job frees its slot for the others then), a
// released batch is adopted whole and counts for its adopter, a raised
// limit takes effect at the next claim, and a process whose lease ran
// out holds nothing.
func TestLimitIsExactAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Register(ctx, "b", "h", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		enqueue(t, s, pool, "lim")
	}
	if err := SetLimit(ctx, pool, "lim", 3); err != nil {
		t.Fatal(err)
	}
	req := int64(0)
	held := map[int32]int{}
	claim := func(owner int32) []*Batch {
		t.Helper()
		req++
		h := held[owner]
		bs, seen, err := s.ClaimSeen(ctx, "lim", owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Held: &h})
		if err != nil {
			t.Fatal(err)
		}
		if seen.Limit == 0 {
			t.Fatalf("the claim did not see the queue's limit")
		}
		for _, x := range bs {
			held[owner] += len(x.Jobs)
		}
		return bs
	}
	count := func(bs []*Batch) int {
		n := 0
		for _, x := range bs {
			n += len(x.Jobs)
		}
		return n
	}
	holds := func() int64 {
		t.Helper()
		ls, err := QueueLimits(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != 1 || ls[0].Queue != "lim" {
			t.Fatalf("queue_limits = %+v; want the one limited queue", ls)
		}
		return ls[0].Held
	}
	flushSeq := int64(0)
	finish := func(owner int32, x *Batch, n int) {
		t.Helper()
		flushSeq++
		acks := make([]Ack, n)
		for k := range n {
			acks[k] = Ack{Batch: x, Job: &x.Jobs[k], State: AckCompleted}
		}
		if _, err := s.Flush(ctx, owner, flushSeq, false, acks, nil); err != nil {
			t.Fatal(err)
		}
		held[owner] -= n
	}

	first := claim(a)
	if n := count(first); n != 3 {
		t.Fatalf("a's first claim took %d jobs under a limit of 3", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs while a held the whole limit", n)
	}
	if _, seen, err := s.ClaimSeen(ctx, "lim", b, 999, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Held: new(int)}); err != nil || !seen.Full {
		t.Fatalf("b's claim at the limit: seen %+v, %v; want Full", seen, err)
	}
	// a finishes two: b may not take them until a says so at its claim.
	finish(a, first[0], 2)
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs before a's next claim counted its finished ones", n)
	}
	if n := count(claim(a)); n != 2 {
		t.Fatalf("a's claim after two finished took %d jobs; want 2", n)
	}
	if h := holds(); h != 3 {
		t.Fatalf("the live processes hold %d; want 3", h)
	}
	// A raised limit: b takes the difference at its next claim.
	if err := SetLimit(ctx, pool, "lim", 5); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(b)); n != 2 {
		t.Fatalf("b took %d jobs after the limit went from 3 to 5; want 2", n)
	}
	// a stops and releases its batches (1 + 2 jobs unfinished): b adopts
	// each whole when it fits, and takes nothing past the limit.
	if _, err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(b)); n != 1 {
		t.Fatalf("b's adoption took %d jobs; want a's first batch's 1", n)
	}
	if n := count(claim(b)); n != 2 {
		t.Fatalf("b's second adoption took %d jobs; want a's second batch's 2", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs past the limit", n)
	}
	if h := holds(); h != 5 {
		t.Fatalf("the live processes hold %d; want 5 (b's)", h)
	}
	// A process whose lease runs out holds nothing.
	c, err := s.Register(ctx, "c", "h", 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLimit(ctx, pool, "lim", 6); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(c)); n != 1 {
		t.Fatalf("c took %d jobs; want the one slot left", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs while c was alive", n)
	}
	waitDead(t, pool, c)
	if n := count(claim(b)); n != 1 {
		t.Fatalf("b took %d jobs once c was dead; want its slot", n)
	}
	// Cleared: the queue runs as its workers allow.
	if err := SetLimit(ctx, pool, "lim", 0); err != nil {
		t.Fatal(err)
	}
	h := held[b]
	bs, seen, err := s.ClaimSeen(ctx, "lim", b, 1000, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Held: &h})
	if err != nil {
		t.Fatal(err)
	}
	if seen.Limit != 0 || count(bs) != 3 {
		t.Fatalf("without a limit b took %d jobs (limit seen %d); want the 3 left", count(bs), seen.Limit)
	}
}

// TestSetLimitRefusesBadValues: a limit is 1 to 1000000, or none.
func TestSetLimitRefusesBadValues(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	for _, n := range []int{-1, 1000001} {
		if err := SetLimit(ctx, pool, "q", n); err == nil {
			t.Errorf("SetLimit(%d) was accepted", n)
		}
	}
	if err := SetLimit(ctx, pool, "", 3); err == nil {
		t.Error("SetLimit of an empty queue name was accepted")
	}
}
