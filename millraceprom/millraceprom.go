// Package millraceprom exports Prometheus metrics of millrace clients.
//
// It lives apart from package millrace so that a program that only uses the
// queue does not link Prometheus: millraceprom imports millrace, never the
// reverse.
//
//	reg := prometheus.NewRegistry()
//	m, err := millraceprom.New(reg, nil)
//	cfg = m.Instrument(cfg)               // insert, work and claim hooks
//	client, err := millrace.NewClient(pool, cfg)
//	detach := m.Attach(client, pool)      // job events, leader, depth, ring
//	defer detach()
//	client.Start(ctx)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Counters and histograms count what this process did: the jobs its clients
// inserted, the claims they made and the outcomes of the attempts they ran.
// Queue depth and the ring's state are read from the database, which every
// process sees alike: aggregate them across processes with max, not sum.
// docs/metrics.md lists every metric.
package millraceprom

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/prometheus/client_golang/prometheus"
)

// Options tune a Metrics. The zero value (or nil) is the defaults.
type Options struct {
	// DepthInterval is the least time between two reads of queue depth
	// (millrace.QueueCounts), which reads every live job of the ring and
	// the tally of history: a scrape within this interval of the last read
	// is served from it. Default 10s; negative disables the depth metrics.
	DepthInterval time.Duration
	// DepthOnLeader reads depth only in the process that is the
	// maintenance leader now (others export no depth series), so that a
	// fleet of N processes pays for one read per interval, not N.
	DepthOnLeader bool
	// RingInterval is the least time between two reads of the ring's
	// state (millrace.ReadStats, a few index probes) and of its slots'
	// sizes. Default 5s; negative disables the ring metrics.
	RingInterval time.Duration
	// ReadTimeout bounds each read from the database (default 5s).
	ReadTimeout time.Duration

	// Histogram buckets, in seconds (jobs for BatchBuckets); nil: the
	// defaults (DefaultClaimBuckets and so on).
	ClaimBuckets, WaitBuckets, RunBuckets, BatchBuckets []float64
}

// The default histogram buckets.
var (
	// DefaultClaimBuckets: 0.25 ms to 4 s.
	DefaultClaimBuckets = prometheus.ExponentialBuckets(0.00025, 2, 15)
	// DefaultWaitBuckets: 1 ms to 10 min.
	DefaultWaitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// DefaultRunBuckets: 1 ms to 1 h.
	DefaultRunBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	// DefaultBatchBuckets: 1 to 1000 jobs (millrace.DefaultMaxBatchJobs).
	DefaultBatchBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// Outcomes are the values of the outcome label of
// millrace_job_outcomes_total: the event kinds of millrace.Subscribe.
var Outcomes = []millrace.EventKind{millrace.EventCompleted, millrace.EventFailed, millrace.EventDiscarded,
	millrace.EventCancelled, millrace.EventSnoozed}

// Metrics holds the metrics of one or more millrace clients of a process.
type Metrics struct {
	opts Options

	inserted   *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	outcomes   *prometheus.CounterVec
	wait       *prometheus.HistogramVec
	run        *prometheus.HistogramVec
	claim      *prometheus.HistogramVec
	batch      *prometheus.HistogramVec
	running    *prometheus.GaugeVec

	seen sync.Map // queue + "\x00" + kind: outcome series made

	db *dbCollector // shared by the Metrics of one registry
}

// attachment is one client Attach subscribed to.
type attachment struct {
	client *millrace.Client
	pool   *pgxpool.Pool
}

// New makes the metrics and registers them with reg (nil:
// prometheus.DefaultRegisterer). A metric already registered there by
// another Metrics is shared with it. Register into a
// prometheus.WrapRegistererWith registerer to tell apart several sets in
// one registry.
func New(reg prometheus.Registerer, opts *Options) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := &Metrics{}
	if opts != nil {
		m.opts = *opts
	}
	o := &m.opts
	if o.DepthInterval == 0 {
		o.DepthInterval = 10 * time.Second
	}
	if o.RingInterval == 0 {
		o.RingInterval = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 5 * time.Second
	}
	buckets := func(b, def []float64) []float64 {
		if len(b) == 0 {
			return def
		}
		return b
	}
	qk := []string{"queue", "kind"}
	m.inserted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millrace_jobs_inserted_total",
		Help: "Jobs inserted by this process's clients (Insert, InsertTx, InsertMany, InsertManyTx), counted when the insert returns; duplicates of unique jobs are not counted.",
	}, qk)
	m.duplicates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millrace_jobs_duplicate_inserts_total",
		Help: "Inserts of unique jobs not made because a job with the same unique key blocked them.",
	}, qk)
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millrace_job_outcomes_total",
		Help: "Committed outcomes of attempts run by this process, by outcome: completed, discarded and cancelled finish a job; failed and snoozed run it again.",
	}, []string{"queue", "kind", "outcome"})
	m.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millrace_job_wait_seconds",
		Help:    "Time from a job becoming ready (inserted, or due) to its attempt starting, per attempt with a committed outcome.",
		Buckets: buckets(o.WaitBuckets, DefaultWaitBuckets),
	}, qk)
	m.run = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millrace_job_run_seconds",
		Help:    "Time an attempt ran, from its start to its worker's return, per attempt with a committed outcome.",
		Buckets: buckets(o.RunBuckets, DefaultRunBuckets),
	}, qk)
	m.claim = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millrace_claim_duration_seconds",
		Help:    "Duration of claims that returned jobs.",
		Buckets: buckets(o.ClaimBuckets, DefaultClaimBuckets),
	}, []string{"queue"})
	m.batch = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millrace_claim_batch_size",
		Help:    "Jobs returned by claims that returned jobs.",
		Buckets: buckets(o.BatchBuckets, DefaultBatchBuckets),
	}, []string{"queue"})
	m.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "millrace_jobs_running",
		Help: "Attempts running in this process now (inside its workers).",
	}, qk)
	m.db = newDBCollector(m.opts)
	var err error
	if m.inserted, err = register(reg, m.inserted); err != nil {
		return nil, err
	}
	if m.duplicates, err = register(reg, m.duplicates); err != nil {
		return nil, err
	}
	if m.outcomes, err = register(reg, m.outcomes); err != nil {
		return nil, err
	}
	if m.wait, err = register(reg, m.wait); err != nil {
		return nil, err
	}
	if m.run, err = register(reg, m.run); err != nil {
		return nil, err
	}
	if m.claim, err = register(reg, m.claim); err != nil {
		return nil, err
	}
	if m.batch, err = register(reg, m.batch); err != nil {
		return nil, err
	}
	if m.running, err = register(reg, m.running); err != nil {
		return nil, err
	}
	if m.db, err = register(reg, m.db); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c with r, or returns the collector already
// registered in its place.
func register[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	if err := r.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// Instrument returns cfg with the metrics' hooks added: an insert
// middleware and a work middleware (innermost, after any cfg has), and an
// OnClaim that calls cfg's own first. Use the result for NewClient; every
// client that inserts or works jobs should be instrumented.
func (m *Metrics) Instrument(cfg millrace.Config) millrace.Config {
	cfg.InsertMiddleware = append(slices.Clone(cfg.InsertMiddleware), m.insertMiddleware)
	cfg.WorkMiddleware = append(slices.Clone(cfg.WorkMiddleware), m.workMiddleware)
	user := cfg.OnClaim
	cfg.OnClaim = func(queue string, d time.Duration, n int) {
		if user != nil {
			user(queue, d, n)
		}
		m.claim.WithLabelValues(queue).Observe(d.Seconds())
		m.batch.WithLabelValues(queue).Observe(float64(n))
	}
	return cfg
}

func (m *Metrics) insertMiddleware(ctx context.Context, jobs []*millrace.InsertParams, next func(context.Context) ([]millrace.InsertResult, error)) ([]millrace.InsertResult, error) {
	res, err := next(ctx)
	if err != nil {
		return res, err
	}
	// Count runs of equal labels with one call each: InsertMany's jobs
	// are usually of one queue and kind.
	for i := 0; i < len(res); {
		r := res[i]
		n, dups := 0, 0
		for ; i < len(res) && res[i].Queue == r.Queue && res[i].Kind == r.Kind; i++ {
			if res[i].Duplicate {
				dups++
			} else {
				n++
			}
		}
		m.touch(r.Queue, r.Kind)
		if n > 0 {
			m.inserted.WithLabelValues(r.Queue, r.Kind).Add(float64(n))
		}
		if dups > 0 {
			m.duplicates.WithLabelValues(r.Queue, r.Kind).Add(float64(dups))
		}
	}
	return res, nil
}

func (m *Metrics) workMiddleware(ctx context.Context, job *millrace.JobMeta, next func(context.Context) error) error {
	g := m.running.WithLabelValues(job.Queue, job.Kind)
	g.Inc()
	defer g.Dec()
	return next(ctx)
}

// touch makes every series of a queue and kind exist, at zero, the first
// time the pair is seen, so that a rate over the first increment is not
// lost.
func (m *Metrics) touch(queue, kind string) {
	key := queue + "\x00" + kind
	if _, ok := m.seen.Load(key); ok {
		return
	}
	if _, loaded := m.seen.LoadOrStore(key, true); loaded {
		return
	}
	m.inserted.WithLabelValues(queue, kind)
	m.duplicates.WithLabelValues(queue, kind)
	for _, o := range Outcomes {
		m.outcomes.WithLabelValues(queue, kind, string(o))
	}
	m.wait.WithLabelValues(queue, kind)
	m.run.WithLabelValues(queue, kind)
}

// Attach subscribes to client's job events (call it before Start, so
// that no outcome is missed) and makes the client a source of the
// database-read metrics (queue depth and the ring, read through pool) and
// of millrace_leader. Several clients may be attached to one Metrics (or
// to Metrics sharing a registry); the database is read through the most
// recently attached one, with the Options of the first Metrics made on
// the registry. The
// returned function detaches the client: it ends the subscription and
// returns once every event received has been counted.
func (m *Metrics) Attach(client *millrace.Client, pool *pgxpool.Pool) (detach func()) {
	a := &attachment{client: client, pool: pool}
	m.db.attach(a)
	events, unsubscribe := client.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			m.observe(ev)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.db.detach(a)
			unsubscribe()
			<-done
		})
	}
}

func (m *Metrics) observe(ev *millrace.Event) {
	m.touch(ev.Queue, ev.JobKind)
	m.outcomes.WithLabelValues(ev.Queue, ev.JobKind, string(ev.Kind)).Inc()
	if ev.Started.IsZero() {
		return // it never ran (cancelled before it started)
	}
	m.wait.WithLabelValues(ev.Queue, ev.JobKind).Observe(max(ev.Wait(), 0).Seconds())
	m.run.WithLabelValues(ev.Queue, ev.JobKind).Observe(max(ev.RunTime(), 0).Seconds())
}
