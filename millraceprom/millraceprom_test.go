package millraceprom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millraceprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newDB and waitFor are the kit's: a pool on a fresh database at the
// current schema, and a wait for a condition.
var (
	newDB   = testkit.DB
	waitFor = testkit.WaitFor
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mixArgs is a job whose worker does what Mode says.
type mixArgs struct {
	N    int    `json:"n"`
	Mode string `json:"mode"` // ok, fail, snooze (once, then ok), cancel, discard
}

func (mixArgs) Kind() string { return "mix" }

// uniqArgs is a unique job nobody works.
type uniqArgs struct{}

func (uniqArgs) Kind() string { return "uniq" }

// value is the value of the one series of family name whose labels
// include want (counter, gauge, or a histogram's count); ok is false when
// there is none.
func value(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return metricValue(m), true
		}
	}
	return 0, false
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// sum adds up every series of family name whose labels include want (for
// histograms, sumOf picks the sum of observations instead of the count).
func sum(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string, sumOf bool) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			if sumOf && m.Histogram != nil {
				total += m.Histogram.GetSampleSum()
			} else {
				total += metricValue(m)
			}
		}
	}
	return total
}

// TestCountsMatch runs a client with metrics over jobs that complete, fail,
// are discarded, snooze and are cancelled, and checks that every counter
// and histogram count equals what happened, and that the hooks the user
// set still run.
func TestCountsMatch(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	reg := prometheus.NewRegistry()
	m, err := millraceprom.New(reg, &millraceprom.Options{DepthInterval: time.Millisecond, RingInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	var snoozed sync.Map
	var ran atomic.Int64
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[mixArgs]) error {
		ran.Add(1)
		switch j.Args.Mode {
		case "fail":
			return errors.New("boom")
		case "snooze":
			if _, again := snoozed.LoadOrStore(j.ID, true); !again {
				return millrace.JobSnooze(20 * time.Millisecond)
			}
		case "cancel":
			return millrace.JobCancel(errors.New("not wanted"))
		case "discard":
			return millrace.JobDiscard(errors.New("hopeless"))
		}
		return nil
	}), millrace.KindOpts{MaxAttempts: 2, Backoff: func(int) time.Duration { return 20 * time.Millisecond }})

	var userClaims, userInserts atomic.Int64
	cfg := m.Instrument(millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 4}, "other": {MaxWorkers: 2}},
		Logger:  quiet(),
		OnClaim: func(string, time.Duration, int) { userClaims.Add(1) },
		InsertMiddleware: []millrace.InsertMiddleware{func(ctx context.Context, jobs []*millrace.InsertParams,
			next func(context.Context) ([]millrace.InsertResult, error)) ([]millrace.InsertResult, error) {
			userInserts.Add(int64(len(jobs)))
			return next(ctx)
		}},
	})
	client, err := millrace.NewClient(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	detach := m.Attach(client, pool)
	defer detach()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()

	// 40 jobs on the default queue: 20 ok (10 of them in one InsertMany),
	// 5 fail twice (then discarded), 5 snooze once, 5 cancel, 5 discard;
	// 2 ok jobs on "other"; a unique job inserted twice on "uq", unworked.
	var many []millrace.InsertManyParams
	for i := range 10 {
		many = append(many, millrace.InsertManyParams{Args: mixArgs{N: i, Mode: "ok"}})
	}
	if _, err := client.InsertMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	n := 10
	for _, mode := range []struct {
		name  string
		count int
	}{{"ok", 10}, {"fail", 5}, {"snooze", 5}, {"cancel", 5}, {"discard", 5}} {
		for range mode.count {
			n++
			if _, err := client.Insert(ctx, mixArgs{N: n, Mode: mode.name}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 2 {
		if _, err := client.Insert(ctx, mixArgs{N: 100 + i, Mode: "ok"}, &millrace.InsertOpts{Queue: "other"}); err != nil {
			t.Fatal(err)
		}
	}
	uq := &millrace.InsertOpts{Queue: "uq", Unique: &millrace.UniqueOpts{ByQueue: true}}
	for range 2 {
		if _, err := client.Insert(ctx, uniqArgs{}, uq); err != nil {
			t.Fatal(err)
		}
	}

	def := map[string]string{"queue": "default", "kind": "mix"}
	outcome := func(o string) float64 {
		v, _ := value(t, reg, "millrace_job_outcomes_total", map[string]string{"queue": "default", "kind": "mix", "outcome": o})
		return v
	}
	// Every job of the default queue has finished: 25 completed (20 ok, 5
	// after their snooze), 10 discarded (5 after two failures, 5 at once),
	// 5 cancelled; and the other queue's 2 completed.
	waitFor(t, "every outcome", 30*time.Second, func() bool {
		o, _ := value(t, reg, "millrace_job_outcomes_total", map[string]string{"queue": "other", "outcome": "completed"})
		return outcome("completed")+outcome("discarded")+outcome("cancelled") == 40 && o == 2
	})

	want := []struct {
		name   string
		labels map[string]string
		v      float64
	}{
		{"millrace_jobs_inserted_total", def, 40},
		{"millrace_jobs_inserted_total", map[string]string{"queue": "other", "kind": "mix"}, 2},
		{"millrace_jobs_inserted_total", map[string]string{"queue": "uq", "kind": "uniq"}, 1},
		{"millrace_jobs_duplicate_inserts_total", map[string]string{"queue": "uq", "kind": "uniq"}, 1},
		{"millrace_jobs_duplicate_inserts_total", def, 0},
		{"millrace_job_outcomes_total", map[string]string{"queue": "default", "outcome": "completed"}, 25},
		{"millrace_job_outcomes_total", map[string]string{"queue": "default", "outcome": "failed"}, 5},
		{"millrace_job_outcomes_total", map[string]string{"queue": "default", "outcome": "discarded"}, 10},
		{"millrace_job_outcomes_total", map[string]string{"queue": "default", "outcome": "cancelled"}, 5},
		{"millrace_job_outcomes_total", map[string]string{"queue": "default", "outcome": "snoozed"}, 5},
		{"millrace_job_outcomes_total", map[string]string{"queue": "other", "outcome": "failed"}, 0},
		// One wait and one run time per attempt: 40 + 5 retries + 5
		// snoozes.
		{"millrace_job_wait_seconds", def, 50},
		{"millrace_job_run_seconds", def, 50},
		{"millrace_jobs_running", def, 0},
		{"millrace_metrics_read_errors_total", map[string]string{"read": "queue_counts"}, 0},
		{"millrace_metrics_read_errors_total", map[string]string{"read": "ring"}, 0},
		{"millrace_metrics_read_errors_total", map[string]string{"read": "slot_sizes"}, 0},
		{"millrace_events_dropped_total", nil, 0},
	}
	for _, w := range want {
		got, ok := value(t, reg, w.name, w.labels)
		if !ok || got != w.v {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.v)
		}
	}
	if got := ran.Load(); got != 52 {
		t.Errorf("the worker ran %d attempts, want 52", got)
	}
	// Every attempt came from a claim: the batch sizes add up to them, and
	// the user's OnClaim saw every claim the histogram did.
	if got := sum(t, reg, "millrace_claim_batch_size", nil, true); got != 52 {
		t.Errorf("sum of claim batch sizes = %v, want 52", got)
	}
	if got := sum(t, reg, "millrace_claim_duration_seconds", nil, false); got != float64(userClaims.Load()) || got == 0 {
		t.Errorf("claims observed = %v, user's OnClaim saw %d", got, userClaims.Load())
	}
	if got := userInserts.Load(); got != 10+30+2+2 {
		t.Errorf("the user's insert middleware saw %d jobs, want 44", got)
	}
	// Run times are at least zero and wait times plausible.
	if s := sum(t, reg, "millrace_job_wait_seconds", def, true); s <= 0 || s > 50*30 {
		t.Errorf("sum of waits = %v s", s)
	}

	waitFor(t, "leadership", 15*time.Second, func() bool {
		v, _ := value(t, reg, "millrace_leader", nil)
		return v == 1
	})
	// Depth, from QueueCounts: the unique job waits on uq; history holds
	// the default queue's 25 completed, 10 discarded and 5 cancelled.
	for _, w := range []struct {
		queue, state string
		v            float64
	}{{"uq", "available", 1}, {"default", "available", 0}, {"default", "running", 0}, {"default", "scheduled", 0},
		{"default", "completed", 25}, {"default", "discarded", 10}, {"default", "cancelled", 5}, {"other", "completed", 2}} {
		got, ok := value(t, reg, "millrace_queue_jobs", map[string]string{"queue": w.queue, "state": w.state})
		if !ok || got != w.v {
			t.Errorf("millrace_queue_jobs{queue=%q,state=%q} = %v (present %v), want %v", w.queue, w.state, got, ok, w.v)
		}
	}
	if v, ok := value(t, reg, "millrace_queue_paused", map[string]string{"queue": "uq"}); !ok || v != 0 {
		t.Errorf("millrace_queue_paused{queue=uq} = %v (present %v), want 0", v, ok)
	}
	// A concurrency limit, and what is held of it: only limited queues.
	if _, ok := value(t, reg, "millrace_queue_running_limit", map[string]string{"queue": "uq"}); ok {
		t.Error("millrace_queue_running_limit{queue=uq} is present without a limit")
	}
	if err := millrace.SetLimit(ctx, pool, "uq", millrace.Limit{Running: 7}); err != nil {
		t.Fatal(err)
	}
	if v, ok := value(t, reg, "millrace_queue_running_limit", map[string]string{"queue": "uq"}); !ok || v != 7 {
		t.Errorf("millrace_queue_running_limit{queue=uq} = %v (present %v), want 7", v, ok)
	}
	if v, ok := value(t, reg, "millrace_queue_running_held", map[string]string{"queue": "uq"}); !ok || v != 0 {
		t.Errorf("millrace_queue_running_held{queue=uq} = %v (present %v), want 0", v, ok)
	}
	if _, ok := value(t, reg, "millrace_queue_per_key_limit", map[string]string{"queue": "uq"}); ok {
		t.Error("millrace_queue_per_key_limit{queue=uq} is present without a per-key limit")
	}
	if err := millrace.SetLimit(ctx, pool, "uq", millrace.Limit{Running: 7, PerKey: 2, Key: []string{"customer_id"}, KeyRate: 30, KeyPer: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"millrace_queue_per_key_limit": 2, "millrace_queue_keys_running": 0,
		"millrace_queue_keys_full": 0, "millrace_queue_key_deferred_jobs": 0, "millrace_queue_key_rate_limit_per_second": 0.5} {
		if v, ok := value(t, reg, name, map[string]string{"queue": "uq"}); !ok || v != want {
			t.Errorf("%s{queue=uq} = %v (present %v), want %v", name, v, ok, want)
		}
	}
	// The ring: four slots with a size, a current slot, ages that make
	// sense.
	for s := range 4 {
		if v, ok := value(t, reg, "millrace_ring_slot_bytes", map[string]string{"slot": fmt.Sprint(s)}); !ok || v <= 0 {
			t.Errorf("millrace_ring_slot_bytes{slot=%d} = %v (present %v)", s, v, ok)
		}
	}
	if v, ok := value(t, reg, "millrace_ring_rotation_age_seconds", nil); !ok || v < 0 || v > 3600 {
		t.Errorf("millrace_ring_rotation_age_seconds = %v (present %v)", v, ok)
	}
	if _, ok := value(t, reg, "millrace_ring_rotations_total", nil); !ok {
		t.Error("millrace_ring_rotations_total missing")
	}

	// The names and help texts pass Prometheus's own lint.
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	// The exposition over HTTP carries the same figures.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`millrace_jobs_inserted_total{kind="mix",queue="default"} 40`,
		`millrace_job_outcomes_total{kind="mix",outcome="completed",queue="default"} 25`,
		`millrace_leader 1`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestDepthCached checks that queue depth is read at most once per
// DepthInterval, and only by the leader when DepthOnLeader is set.
func TestDepthCached(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	reg := prometheus.NewRegistry()
	m, err := millraceprom.New(reg, &millraceprom.Options{DepthInterval: time.Hour, RingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	client, err := millrace.NewClient(pool, m.Instrument(millrace.Config{Logger: quiet()}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Attach(client, pool)()
	if _, err := client.Insert(ctx, uniqArgs{}, &millrace.InsertOpts{Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	avail := map[string]string{"queue": "q", "state": "available"}
	if v, ok := value(t, reg, "millrace_queue_jobs", avail); !ok || v != 1 {
		t.Fatalf("available = %v (present %v), want 1", v, ok)
	}
	if _, err := client.Insert(ctx, uniqArgs{}, &millrace.InsertOpts{Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	// Within the interval the first read is served again.
	if v, _ := value(t, reg, "millrace_queue_jobs", avail); v != 1 {
		t.Errorf("available = %v within the interval, want the cached 1", v)
	}
	if v, _ := value(t, reg, "millrace_jobs_inserted_total", map[string]string{"queue": "q"}); v != 2 {
		t.Errorf("inserted = %v, want 2", v)
	}
	// RingInterval < 0: no ring metrics, and no read of them.
	if _, ok := value(t, reg, "millrace_ring_current_slot", nil); ok {
		t.Error("ring metrics present with RingInterval < 0")
	}

	// A client that is not started never leads: with DepthOnLeader its
	// process exports no depth.
	reg2 := prometheus.NewRegistry()
	m2, err := millraceprom.New(reg2, &millraceprom.Options{DepthOnLeader: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Attach(client, pool)()
	if _, ok := value(t, reg2, "millrace_queue_jobs", avail); ok {
		t.Error("depth exported by a process that does not lead, with DepthOnLeader")
	}
	if v, ok := value(t, reg2, "millrace_leader", nil); !ok || v != 0 {
		t.Errorf("millrace_leader = %v (present %v), want 0", v, ok)
	}
}

// TestDetached checks that a Metrics with no client attached serves its
// counters but reads nothing from the database, and that two Metrics on
// one registry share the counters.
func TestDetached(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := millraceprom.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := millraceprom.New(reg, nil)
	if err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
	_, _ = m1, m2
	if _, ok := value(t, reg, "millrace_leader", nil); ok {
		t.Error("millrace_leader exported with no client attached")
	}
	if v, ok := value(t, reg, "millrace_metrics_read_errors_total", map[string]string{"read": "ring"}); !ok || v != 0 {
		t.Errorf("read errors = %v (present %v), want 0", v, ok)
	}
}
