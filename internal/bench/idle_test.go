package bench_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

type idleArgs struct{}

func (idleArgs) Kind() string { return "idle" }

// TestAcceptanceIdleQueues (issue 22, acceptance 4): a process working
// 1,000 queues that have no jobs costs at most 1% of a core: its own CPU
// (getrusage) plus the server time of its calls into the schema
// (pg_stat_user_functions, track_functions = 'all' on the test database),
// measured over a minute once the idle queues' polls have backed off.
// Run it without -race (the race detector multiplies the process's CPU):
// MILLRACE_BENCH_ACCEPTANCE=1 go test -run TestAcceptanceIdleQueues ./internal/bench/
func TestAcceptanceIdleQueues(t *testing.T) {
	acceptance(t)
	ctx := context.Background()
	pool := testkit.DB(t)
	if _, err := pool.Exec(ctx, fmt.Sprintf("ALTER DATABASE %q SET track_functions = 'all'", pool.Config().ConnConfig.Database)); err != nil {
		t.Fatal(err)
	}
	pool.Reset() // new connections take the setting
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(context.Context, *millrace.Job[idleArgs]) error { return nil }))
	queues := map[string]millrace.QueueConfig{}
	for i := range 1000 {
		queues[fmt.Sprintf("idle-%04d", i)] = millrace.QueueConfig{MaxWorkers: 1}
	}
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	settle, measure := 45*time.Second, 60*time.Second
	time.Sleep(settle) // a measurement window, not a synchronization
	usage := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	server := func() (ms float64, calls int64) {
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(self_time), 0), coalesce(sum(calls), 0)
			FROM pg_stat_user_functions WHERE schemaname = 'millrace'`).Scan(&ms, &calls); err != nil {
			t.Fatal(err)
		}
		return ms, calls
	}
	perFunc := func() map[string][2]float64 {
		rows, err := pool.Query(ctx, `SELECT funcname, self_time, calls FROM pg_stat_user_functions WHERE schemaname = 'millrace'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string][2]float64{}
		for rows.Next() {
			var name string
			var ms float64
			var calls int64
			rows.Scan(&name, &ms, &calls)
			m[name] = [2]float64{ms, float64(calls)}
		}
		return m
	}
	pool.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	cpu0, start := usage(), time.Now()
	ms0, calls0 := server()
	f0 := perFunc()
	time.Sleep(measure)
	cpu1, wall := usage(), time.Since(start)
	pool.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	ms1, calls1 := server()
	for name, v := range perFunc() {
		if d := v[0] - f0[name][0]; d > 10 {
			t.Logf("  %s: %.0f ms self, %.0f calls", name, d, v[1]-f0[name][1])
		}
	}
	procPct := 100 * float64(cpu1-cpu0) / float64(wall)
	serverPct := 100 * (ms1 - ms0) / float64(wall.Milliseconds())
	t.Logf("1,000 idle queues over %s: process CPU %.2f%% of a core, server time in millrace functions %.2f%% (%d calls, %.1f/s)",
		wall.Round(time.Second), procPct, serverPct, calls1-calls0, float64(calls1-calls0)/wall.Seconds())
	if procPct+serverPct > 1 {
		t.Errorf("1,000 idle queues cost %.2f%% of a core (process %.2f, server %.2f); want at most 1%%", procPct+serverPct, procPct, serverPct)
	}
}
