package millrace_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

type skewFail struct{ N int }

func (skewFail) Kind() string { return "skew.fail" }

type skewSnooze struct{ N int }

func (skewSnooze) Kind() string { return "skew.snooze" }

type skewPeriod struct{}

func (skewPeriod) Kind() string { return "skew.period" }

// TestSkewedClocksDecideNothing: a host whose clock is 25 hours behind or
// ahead of the server's works and produces exactly as one on time. A
// failed job runs again after its backoff (not at once, not a day later),
// a snoozed one after its delay, history records the server's times, and
// a unique period is the server's (three inserts in one period make one
// job).
func TestSkewedClocksDecideNothing(t *testing.T) {
	for _, skew := range []time.Duration{-25 * time.Hour, 25 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := context.Background()
			pool := newDB(t)
			var mu sync.Mutex
			runs := map[string]int{}
			ws := millrace.NewWorkers()
			backoff := time.Second
			millrace.AddWorker(ws, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[skewFail]) error {
				mu.Lock()
				runs["fail"]++
				n := runs["fail"]
				mu.Unlock()
				if n == 1 {
					return errors.New("the first attempt fails")
				}
				return nil
			}), millrace.KindOpts{Backoff: func(int) time.Duration { return backoff }})
			millrace.AddWorker(ws, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[skewSnooze]) error {
				mu.Lock()
				runs["snooze"]++
				n := runs["snooze"]
				mu.Unlock()
				if n == 1 {
					return millrace.JobSnooze(time.Second)
				}
				return nil
			}), millrace.KindOpts{})
			millrace.AddWorker(ws, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[skewPeriod]) error { return nil }), millrace.KindOpts{})
			cfg := millrace.Config{}
			millrace.SetClock(&cfg, func() time.Time { return time.Now().Add(skew) })
			c := startClient(t, pool, ws, cfg)

			// On a queue nobody works: the jobs stay unfinished, so only
			// their period decides whether they block.
			period := &millrace.InsertOpts{Queue: "skew-unworked", Unique: &millrace.UniqueOpts{ByPeriod: time.Hour}}
			// The period is the hour on the server's clock (the insert reads
			// clock_timestamp()), so the three inserts must all fall in one
			// server hour: too near the next hour, wait until it has begun.
			serverNow := func() time.Time {
				var now time.Time
				if err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
					t.Fatal(err)
				}
				return now.UTC()
			}
			const margin = 10 * time.Second
			testkit.WaitFor(t, "the server's clock to be at least 10 s from the next hour", time.Minute, func() bool {
				now := serverNow()
				return now.Truncate(time.Hour).Add(time.Hour).Sub(now) > margin
			})
			before := serverNow().Truncate(time.Hour)
			inserted := 0
			for range 3 {
				if !mustInsert(t, c, skewPeriod{}, period).Duplicate {
					inserted++
				}
			}
			if after := serverNow().Truncate(time.Hour); !after.Equal(before) {
				t.Fatalf("the three inserts took over %v and spanned the server's hours %v and %v", margin, before, after)
			}
			if inserted != 1 {
				t.Errorf("three inserts unique by the hour made %d jobs, want 1", inserted)
			}
			failed := mustInsert(t, c, skewFail{}, nil).ID
			snoozed := mustInsert(t, c, skewSnooze{}, nil).ID
			done := func(id int64) bool {
				var n int
				if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1 AND state = 'completed'", id).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 1
			}
			// A delay read on a clock a day off would make it a day long.
			testkit.WaitFor(t, "the failed and the snoozed job to complete on their second run", 30*time.Second, func() bool {
				return done(failed) && done(snoozed)
			})
			// Each second run started after the delay, by the server's
			// clock, and no attempt's times are off the server's.
			for _, id := range []int64{failed, snoozed} {
				rows, err := pool.Query(ctx, `SELECT attempt, state, started_at, finished_at, clock_timestamp() FROM millrace.history
					WHERE id = $1 ORDER BY finished_at`, id)
				if err != nil {
					t.Fatal(err)
				}
				var prevFinished time.Time
				for rows.Next() {
					var attempt int
					var state string
					var started, finished, now time.Time
					if err := rows.Scan(&attempt, &state, &started, &finished, &now); err != nil {
						t.Fatal(err)
					}
					if d := now.Sub(finished); d < 0 || d > time.Minute {
						t.Errorf("job %d attempt %d (%s) finished at %v by history, %v before the server's now", id, attempt, state, finished, d)
					}
					if !prevFinished.IsZero() && started.Sub(prevFinished) < 900*time.Millisecond {
						t.Errorf("job %d ran again %v after its previous attempt finished, before its 1 s delay", id, started.Sub(prevFinished))
					}
					prevFinished = finished
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
