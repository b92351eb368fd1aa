package ui

import (
	"context"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/ops/opstest"
)

// After time no page watched, the next sample covers the last second, not
// the whole gap: the charts show no sample there, and break their lines.
func TestSamplerGap(t *testing.T) {
	_, pool := opstest.NewDatabase(t)
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
