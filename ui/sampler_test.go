package ui

import (
	"context"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
)

// After time no page watched, the next sample covers the last second, not
// the whole gap: the charts show no sample there, and break their lines.
func TestSamplerGap(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	s := newSampler(pool)
	clock := time.Now()
	s.now = func() time.Time { return clock }
	if _, smp, err := s.get(ctx); err != nil || len(smp) != 1 {
		t.Fatalf("first sample: %v %v", smp, err)
	}
	clock = clock.Add(time.Second)
	_, smp, err := s.get(ctx)
	if err != nil || len(smp) != 2 || !smp[1].Since.Equal(smp[0].At) {
		t.Fatalf("a second later the sample continues from the last: %+v %v", smp, err)
	}
	clock = clock.Add(30 * time.Second)
	_, smp, err = s.get(ctx)
	if err != nil || len(smp) != 3 {
		t.Fatalf("after the gap: %+v %v", smp, err)
	}
	if w := smp[2].At.Sub(smp[2].Since); w != time.Second {
		t.Errorf("the sample after 30 s unwatched covers %v, want the last second", w)
	}
	clock = clock.Add(2 * time.Minute)
	if _, smp, err = s.get(ctx); err != nil || len(smp) != 1 {
		t.Errorf("after 2 minutes unwatched the charts start afresh: %+v %v", smp, err)
	}
}

// The queues' live counts are read every second; history's counts
// (completed, discarded) every ten seconds, or at once after an action.
func TestSamplerReadsHistoryEveryTenSeconds(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	s := newSampler(pool)
	clock := time.Now()
	s.now = func() time.Time { return clock }
	// Reads take no time on the fake clock: the pace that a slow read
	// sets (TestSamplerPacesTheCounts) must not move the cadence tested
	// here, as it did on a loaded machine.
	s.elapsed = func(time.Time) time.Duration { return time.Millisecond }
	queue := func(name string) ops.Queue {
		t.Helper()
		clock = clock.Add(time.Second)
		qs, _, err := s.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == name {
				return q
			}
		}
		t.Fatalf("no queue %s in %+v", name, qs)
		return ops.Queue{}
	}
	testkit.Enqueue(t, pool, "a", "a", `{}`, 0)
	clientkit.Discard(t, pool, "b", "one")
	if q := queue("a"); q.Available != 1 {
		t.Fatalf("queue a: %+v, want 1 available", q)
	}
	if q := queue("b"); q.Discarded != 1 {
		t.Fatalf("queue b: %+v, want 1 discarded", q)
	}
	testkit.Enqueue(t, pool, "a", "a", `{}`, 0)
	clientkit.Discard(t, pool, "b", "two")
	if q := queue("a"); q.Available != 2 {
		t.Errorf("a second later, queue a: %+v, want 2 available (live counts every second)", q)
	}
	if q := queue("b"); q.Discarded != 1 {
		t.Errorf("a second later, queue b: %+v, want 1 discarded still (history every ten seconds)", q)
	}
	clock = clock.Add(10 * time.Second)
	if q := queue("b"); q.Discarded != 2 {
		t.Errorf("ten seconds later, queue b: %+v, want 2 discarded", q)
	}
	clientkit.Discard(t, pool, "b", "three")
	s.invalidate()
	if q := queue("b"); q.Discarded != 3 {
		t.Errorf("after an action, queue b: %+v, want 3 discarded at once", q)
	}
}

// The queues are read within their share of the time: after a read that
// took 200 ms, the next waits 4 s (the activity is still sampled every
// second); an action makes it at once.
func TestSamplerPacesTheCounts(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	s := newSampler(pool)
	clock := time.Now()
	s.now = func() time.Time { return clock }
	s.elapsed = func(time.Time) time.Duration { return 200 * time.Millisecond }
	available := func(after time.Duration) (int64, int) {
		t.Helper()
		clock = clock.Add(after)
		qs, smp, err := s.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == "a" {
				return q.Available, len(smp)
			}
		}
		return 0, len(smp)
	}
	testkit.Enqueue(t, pool, "a", "a", `{}`, 0)
	if n, _ := available(0); n != 1 {
		t.Fatalf("first read: %d available, want 1", n)
	}
	testkit.Enqueue(t, pool, "a", "a", `{}`, 0)
	if n, samples := available(time.Second); n != 1 || samples != 2 {
		t.Errorf("a second after a read of 200 ms: %d available and %d samples; want the last read's 1, and a new sample", n, samples)
	}
	if n, _ := available(3 * time.Second); n != 2 {
		t.Errorf("4 s after a read of 200 ms: %d available, want 2", n)
	}
	testkit.Enqueue(t, pool, "a", "a", `{}`, 0)
	s.invalidate()
	if n, _ := available(0); n != 3 {
		t.Errorf("after an action: %d available, want 3 at once", n)
	}
}
