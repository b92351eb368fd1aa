package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// endAfter is a context that ends as soon as its tracker has offered n
// jobs: the run ends in the middle of a tick of the paced schedule, with
// the tick's jobs offered up to then and more of them due.
type endAfter struct {
	context.Context
	t    *tracker
	n    int64
	once sync.Once
	done chan struct{}
}

func newEndAfter(t *tracker, n int64) *endAfter {
	return &endAfter{Context: context.Background(), t: t, n: n, done: make(chan struct{})}
}

func (c *endAfter) Done() <-chan struct{} {
	if c.Err() != nil {
		c.once.Do(func() { close(c.done) })
	}
	return c.done
}

func (c *endAfter) Err() error {
	if c.t.offered.Load() >= c.n {
		return context.Canceled
	}
	return nil
}

// TestProducerPacedEnd: the paced producer sends every job it counted as
// offered, also when the run ends in the middle of a tick, so that no job
// is expected that was never inserted. The schedule starts a second in
// the past at 100,000 jobs a second, so the first tick holds 100,000 jobs
// due; the run ends once 1,000 are offered. (The producer used to give
// each job to its goroutines in a select that also watched the run's end:
// once the run had ended it dropped the job it was sending half the time,
// and went on offering the tick's jobs until it did; a run then showed
// e.g. "completed 1703/1704 expected".)
func TestProducerPacedEnd(t *testing.T) {
	for _, mix := range []bool{false, true} {
		name := "plain"
		if mix {
			name = "mix"
		}
		t.Run(name, func(t *testing.T) {
			tr := newTracker(time.Now(), 1)
			f := newFakeMixer()
			p := &producer{s: f, t: tr, schedMax: 2 * time.Second}
			if mix {
				p.mix = newMixer(Mix{Fail: 20, Snooze: 5, Cancel: 5, Sched: 20, Unique: 10}, 1)
				p.mixer = f
			}
			const n = 1000
			ctx := newEndAfter(tr, n)
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.paced(ctx, time.Now().Add(-time.Second), 100_000, 8)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the paced producer did not return within 30 s of the run's end")
			}
			if e := p.errors.Load(); e != 0 {
				t.Errorf("%d errors: %s", e, *p.lastErr.Load())
			}
			if got := tr.offered.Load(); got != n {
				t.Errorf("offered %d jobs, want %d: the producer went on offering after the run ended", got, n)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			var unsent []int64
			tr.each(func(id int64, c *chunk, k int64) {
				if !f.seen[id] {
					unsent = append(unsent, id)
				}
			})
			if len(unsent) > 0 {
				t.Errorf("%d jobs offered and never sent to the strategy: %v", len(unsent), unsent[:min(len(unsent), 10)])
			}
			if !mix && tr.enqueued.Load() != tr.offered.Load() {
				t.Errorf("offered %d, enqueued %d", tr.offered.Load(), tr.enqueued.Load())
			}
		})
	}
}

// TestWriteTableEnqueueErrors: a strategy whose producer had enqueue
// calls fail says so under the table, with the last error: their jobs
// are offered, and expected, and never inserted.
func TestWriteTableEnqueueErrors(t *testing.T) {
	sum := &Summary{Strategies: map[string]*StrategySummary{
		"river": {Phases: map[string]*PhaseSummary{}, EnqueueErrors: 2, EnqueueLastError: "ERROR: deadlock detected (SQLSTATE 40P01)"},
		"que":   {Phases: map[string]*PhaseSummary{}},
	}}
	var b strings.Builder
	WriteTable(&b, sum, false)
	want := "river: 2 enqueue calls failed (their jobs offered, never enqueued); the last: ERROR: deadlock detected (SQLSTATE 40P01)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the line %q", b.String(), want)
	}
	if strings.Contains(b.String(), "que: ") {
		t.Errorf("table:\n%s\nsays something of que, which had no error", b.String())
	}
}
