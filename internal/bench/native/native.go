// Package native is the bench strategy "millrace": the real millrace client,
// through its public API only (no segment table is named), in its own
// database schema.
package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/millraceprom"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	bench.Register("millrace", func() bench.Strategy { return &Strategy{watchPace: ops.Pacer{Share: ops.CountsShare}} })
}

// The optional capabilities the bench looks for.
var (
	_ bench.Rotator      = (*Strategy)(nil)
	_ bench.Multiprocess = (*Strategy)(nil)
	_ bench.Staller      = (*Strategy)(nil)
	_ bench.Instrumented = (*Strategy)(nil)
	_ bench.Mixer        = (*Strategy)(nil)
	_ bench.Historian    = (*Strategy)(nil)
	_ bench.Chaoser      = (*Strategy)(nil)
)

// args is the bench job as millrace stores it.
type args struct {
	ID      int64           `json:"id"`
	Payload json.RawMessage `json:"p"`
	// U is the unique key of a --mix job inserted as unique (the bench
	// id of the original); the job is unique by it alone.
	U int64 `json:"u,omitempty"`
	// key, under --limit per-key=N, is the job's key, stored in the args
	// field keyArg.
	key    int64
	keyArg string
}

// MarshalJSON writes the job's fields and, under a per-key limit, its
// key in the field the limit names.
func (a args) MarshalJSON() ([]byte, error) {
	type plain args
	b, err := json.Marshal(plain(a))
	if err != nil || a.key == 0 {
		return b, err
	}
	k, err := json.Marshal(a.keyArg)
	if err != nil {
		return nil, err
	}
	b = append(append(append(b[:len(b)-1], ','), k...), ':')
	return append(strconv.AppendInt(b, a.key, 10), '}'), nil
}

// argsOf is job j as millrace stores it.
func argsOf(j bench.Job) args {
	return args{ID: j.ID, Payload: j.Payload, U: j.UniqueKey, key: j.Key, keyArg: j.KeyArg}
}

// uniqueByU makes jobs unique by their u argument only, so that a
// duplicate carries its own bench id and a duplicate that runs is seen as
// itself.
var uniqueByU = &millrace.UniqueOpts{ByArgs: true, ArgKeys: []string{"u"}}

func (args) Kind() string { return "bench" }

// applicationName marks the strategy's connections in pg_stat_activity; a
// process of a multi-process run adds its index (millrace-bench-p2).
const applicationName = "millrace-bench"

// stopTimeout is how long a client's Stop waits for running jobs.
const stopTimeout = 30 * time.Second

// Strategy runs the bench's jobs through millrace.Clients.
type Strategy struct {
	url string
	// sessionURL is the direct URL for the session connection when url
	// goes through a transaction pooler (--pooler).
	sessionURL string
	pool       *pgxpool.Pool                   // the producer's, Remaining's and Serve's; the workers' too with one process
	stats      *pgxpool.Pool                   // one connection for the sampler's reads of millrace.ReadStats
	client     atomic.Pointer[millrace.Client] // inserts go through the working client once it runs (one process)

	mu     sync.Mutex
	queues map[string]bool // queues the bench put jobs on

	// WatchQueues's pace and its last read of history's counts.
	watchPace ops.Pacer
	watchFull time.Time

	// With --metrics-listen: every client is instrumented, and the
	// working ones attached, until Work and Serve return.
	reg     *prometheus.Registry
	metrics *millraceprom.Metrics

	// rotateAfter is the clients' RotateAfter (Env.RotateAfter; 0: the
	// library's default), set by Work.
	rotateAfter time.Duration
	// limit is Env.Limit, set by Work: the clients' QueueConfig.MaxRunning.
	limit bench.Limit
}

// limitConfig is --limit as the clients' QueueConfig.Limit (nil: none
// given, the queue's limits stay as they are).
func limitConfig(l bench.Limit) *millrace.Limit {
	if l.Zero() {
		return nil
	}
	ml := &millrace.Limit{Running: l.Running, Rate: l.Rate, Per: l.Per, PerKey: l.PerKey, KeyRate: l.KeyRate, KeyPer: l.KeyPer}
	if l.PerKey > 0 || l.KeyRate > 0 {
		ml.Key = []string{l.Key}
	}
	return ml
}

// Limits says the strategy runs under --limit (bench.Limiter).
func (s *Strategy) Limits() bool { return true }

// Instrument makes every client of the strategy export millraceprom's
// metrics into reg.
func (s *Strategy) Instrument(reg *prometheus.Registry) error {
	m, err := millraceprom.New(reg, nil)
	if err != nil {
		return err
	}
	s.reg, s.metrics = reg, m
	return nil
}

// config adds the metrics' hooks to cfg when the strategy is instrumented.
func (s *Strategy) config(cfg millrace.Config) millrace.Config {
	if s.metrics == nil {
		return cfg
	}
	return s.metrics.Instrument(cfg)
}

// attach subscribes the metrics to c's events; the returned function
// detaches it once c has stopped.
func (s *Strategy) attach(c *millrace.Client, pool *pgxpool.Pool) func() {
	if s.metrics == nil {
		return func() {}
	}
	return s.metrics.Attach(c, pool)
}

// MetricTotals sums, over kinds, the series of the main queue (the
// default queue) that count what the bench counts too: jobs inserted,
// outcomes, attempts (the wait and run time histograms), claims and the
// jobs they returned.
func (s *Strategy) MetricTotals() map[string]float64 {
	if s.reg == nil {
		return nil
	}
	fams, err := s.reg.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["queue"] != millrace.DefaultQueue {
				continue
			}
			key := f.GetName() + `{queue="` + millrace.DefaultQueue + `"`
			if o := l["outcome"]; o != "" {
				key += `,outcome="` + o + `"`
			}
			switch {
			case m.Counter != nil:
				out[key+"}"] += m.Counter.GetValue()
			case m.Histogram != nil:
				out[strings.Replace(key, "{", "_count{", 1)+"}"] += float64(m.Histogram.GetSampleCount())
				out[strings.Replace(key, "{", "_sum{", 1)+"}"] += m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

// Name is "millrace".
func (s *Strategy) Name() string { return "millrace" }

// DefaultWorkers is the worker count without --workers: River's own
// benchmark's, as the river strategy's (bench.GoroutineWorkers).
func (s *Strategy) DefaultWorkers() int { return bench.GoroutineWorkers }

// Multiprocess reports that Work runs Env.Processes clients.
func (s *Strategy) Multiprocess() bool { return true }

func newPool(ctx context.Context, url, app string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = conns
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	return pgxpool.NewWithConfig(ctx, cfg)
}

// SetSessionURL makes every client's session connection (LISTEN, the
// process's identity) go to url, bypassing the pooler the work goes
// through.
func (s *Strategy) SetSessionURL(url string) { s.sessionURL = url }

// Setup drops any previous millrace schema and migrates a fresh one.
func (s *Strategy) Setup(ctx context.Context, url string) error {
	s.url = url
	s.queues = map[string]bool{millrace.DefaultQueue: true}
	var err error
	if s.pool, err = newPool(ctx, url, applicationName, 48); err != nil {
		return err
	}
	if s.stats, err = newPool(ctx, url, "millrace-bench-sampler", 1); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "DROP SCHEMA IF EXISTS millrace CASCADE"); err != nil {
		return err
	}
	if err := millrace.Migrate(ctx, s.pool); err != nil {
		return err
	}
	c, err := millrace.NewClient(s.pool, s.config(millrace.Config{Logger: quiet()}))
	s.client.Store(c)
	return err
}

// lostWatcher is quiet() that calls lost (when not nil) each time the
// client logs that its lease ran out.
func lostWatcher(lost func()) *slog.Logger {
	if lost == nil {
		return quiet()
	}
	return slog.New(watchHandler{lost: lost, next: quiet().Handler()})
}

// watchHandler is a slog handler that passes records on to next but calls
// lost on the client's "lease ran out" warning.
type watchHandler struct {
	lost func()
	next slog.Handler
}

func (h watchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}
func (h watchHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "lease ran out") {
		h.lost()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}
func (h watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return watchHandler{lost: h.lost, next: h.next.WithAttrs(as)}
}
func (h watchHandler) WithGroup(g string) slog.Handler {
	return watchHandler{lost: h.lost, next: h.next.WithGroup(g)}
}

// quiet is the client's logger in the bench: nothing, unless
// MILLRACE_BENCH_LOG names a level (debug, info, warn, error), which
// writes the client's records from that level on to stderr (a chaos
// worker process's stderr is chaos-processes.log).
func quiet() *slog.Logger {
	var l slog.Level
	if v := os.Getenv("MILLRACE_BENCH_LOG"); v != "" && l.UnmarshalText([]byte(v)) == nil {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
}

func (s *Strategy) useQueue(q string) {
	s.mu.Lock()
	s.queues[q] = true
	s.mu.Unlock()
}

func (s *Strategy) queueNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.queues))
	for q := range s.queues {
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

// Tables lists the schema's real tables from the catalog: plain tables and
// the partitions of partitioned ones (relkind 'r'), never the partitioned
// parents, which hold no rows of their own. It is read once, after Setup.
func (s *Strategy) Tables() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'millrace' AND c.relkind = 'r' ORDER BY c.relname`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	return names
}

// HistoryTables lists the buckets of millrace.finished and
// millrace.completed, the history of finished attempts (kept 24 h for
// completed jobs, 7 days for the others), whose growth is the retention's,
// not the queue's.
func (s *Strategy) HistoryTables() []string {
	var out []string
	for _, t := range s.Tables() {
		if strings.HasPrefix(t, "millrace.finished_") || strings.HasPrefix(t, "millrace.completed_") {
			out = append(out, t)
		}
	}
	return out
}

// Rotations is the schema's cumulative number of segment rotations
// (millrace.ReadStats), read on the sampler's own connection.
func (s *Strategy) Rotations(ctx context.Context) (int64, error) {
	st, err := millrace.ReadStats(ctx, s.stats)
	return st.Rotations, err
}

// MaxBatch is the largest InsertMany the producer sends.
func (s *Strategy) MaxBatch() int { return 1000 }

// Enqueue inserts one job with Insert, or several with InsertMany (COPY).
func (s *Strategy) Enqueue(ctx context.Context, jobs []bench.Job) error {
	if len(jobs) == 1 {
		_, err := s.client.Load().Insert(ctx, argsOf(jobs[0]), nil)
		return err
	}
	params := make([]millrace.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = millrace.InsertManyParams{Args: argsOf(j)}
	}
	_, err := s.client.Load().InsertMany(ctx, params)
	return err
}

// Work runs env.Processes millrace clients on the default queue until ctx
// ends, then stops them gracefully. The env.Workers workers are split
// between the processes (the first ones take one more when they do not
// divide evenly), so the total concurrency does not depend on
// --processes. With one process the client uses the strategy's pool, which
// the producer shares, and the producer's inserts wake its workers
// directly, as in an application that inserts and works in one process.
// With several, each client has a pool and a listener of its own, as
// separate processes would, and the producer's inserts reach them only by
// NOTIFY.
func (s *Strategy) Work(ctx context.Context, env bench.Env) error {
	n := max(env.Processes, 1)
	s.rotateAfter = env.RotateAfter
	s.limit = env.Limit
	if env.Workers < n {
		return fmt.Errorf("millrace: %d workers cannot make %d processes", env.Workers, n)
	}
	type proc struct {
		pool   *pgxpool.Pool
		client *millrace.Client
		detach func()
	}
	procs := make([]proc, 0, n)
	defer func() {
		if n > 1 {
			for _, p := range procs {
				p.pool.Close()
			}
		}
	}()
	stopAll := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		errs := make([]error, len(procs))
		var wg sync.WaitGroup
		for i, p := range procs {
			if p.client != nil {
				wg.Go(func() {
					errs[i] = p.client.Stop(sctx)
					p.detach() // every outcome is counted
				})
			}
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	for i := range n {
		workers := env.Workers / n
		if i < env.Workers%n {
			workers++
		}
		p := proc{pool: s.pool}
		if n > 1 {
			var err error
			p.pool, err = newPool(ctx, s.url, fmt.Sprintf("%s-p%d", applicationName, i), int32(min(48, 8+workers)))
			if err != nil {
				return errors.Join(err, stopAll())
			}
		}
		procs = append(procs, p)
		c, err := s.newClient(p.pool, millrace.DefaultQueue, workers, i, env.Handle, env.ObserveClaim, env.RetryBackoff)
		if err != nil {
			return errors.Join(err, stopAll())
		}
		if n == 1 {
			// Inserts from the bench wake this client's workers directly too.
			s.client.Store(c)
		}
		detach := s.attach(c, p.pool)
		if err := c.Start(ctx); err != nil {
			detach()
			return errors.Join(err, stopAll())
		}
		procs[i].client, procs[i].detach = c, detach
	}
	<-ctx.Done()
	return stopAll()
}

// newClient makes a client that works queue with workers workers, each job
// handed to handle as run by process proc. A handler's bench.SnoozeError
// snoozes the job; any other error fails the attempt, retried after
// backoff (0: the library's default backoff).
func (s *Strategy) newClient(pool *pgxpool.Pool, queue string, workers, proc int, handle bench.Handler, observe func(time.Duration, int),
	backoff time.Duration) (*millrace.Client, error) {
	return s.newClientLeases(pool, queue, workers, proc, handle, observe, backoff, bench.Leases{})
}

// newClientLeases is newClient with the process and leader leases set
// (zero: the library's defaults).
func (s *Strategy) newClientLeases(pool *pgxpool.Pool, queue string, workers, proc int, handle bench.Handler, observe func(time.Duration, int),
	backoff time.Duration, leases bench.Leases) (*millrace.Client, error) {
	ws := millrace.NewWorkers()
	var kind millrace.KindOpts
	if backoff > 0 {
		kind.Backoff = func(int) time.Duration { return backoff }
	}
	millrace.AddWorker(ws, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[args]) error {
		err := handle(ctx, bench.Job{ID: j.Args.ID, Payload: j.Args.Payload, Process: proc, ReadyAt: j.ReadyAt})
		if sn := (*bench.SnoozeError)(nil); errors.As(err, &sn) {
			return millrace.JobSnooze(sn.Delay)
		}
		return err
	}), kind)
	return millrace.NewClient(pool, s.config(millrace.Config{
		SessionURL:   s.sessionURL,
		Workers:      ws,
		ProcessLease: leases.Process,
		LeaderLease:  leases.Leader,
		RotateAfter:  s.rotateAfter,
		Queues:       map[string]millrace.QueueConfig{queue: {MaxWorkers: workers, Limit: limitConfig(s.limit)}},
		Logger:       lostWatcher(leases.Lost),
		OnClaim: func(_ string, d time.Duration, n int) {
			if observe != nil {
				observe(d, n)
			}
		},
	}))
}

// WorkProcess runs one client of env.Workers workers on the default queue,
// with a pool of its own, as one process of the chaos scenario; it reports
// its leadership to leading (polled every 100 ms) and stops gracefully
// when ctx ends.
func (s *Strategy) WorkProcess(ctx context.Context, env bench.Env, proc int, leases bench.Leases, leading func(bool)) error {
	s.url = env.URL
	pool, err := newPool(ctx, env.URL, fmt.Sprintf("%s-p%d", applicationName, proc), int32(min(48, 8+env.Workers)))
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := s.newClientLeases(pool, millrace.DefaultQueue, env.Workers, proc, env.Handle, env.ObserveClaim, env.RetryBackoff, leases)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	lead := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		if l := c.Leader(); l != lead {
			lead = l
			leading(l)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return c.Stop(sctx)
}

// EnqueueAttempts inserts job on the default queue with maxAttempts
// attempts; the reference is its millrace id.
func (s *Strategy) EnqueueAttempts(ctx context.Context, job bench.Job, maxAttempts int) (int64, error) {
	res, err := s.client.Load().Insert(ctx, args{ID: job.ID, Payload: job.Payload}, &millrace.InsertOpts{MaxAttempts: maxAttempts})
	if err != nil {
		return 0, err
	}
	return res.ID, nil
}

// EnqueueUniqueTx enqueues job on the default queue inside tx through the
// SQL API, unique by key.
func (s *Strategy) EnqueueUniqueTx(ctx context.Context, tx pgx.Tx, job bench.Job, key string) error {
	p := "null"
	if len(job.Payload) > 0 {
		p = string(job.Payload)
	}
	_, err := tx.Exec(ctx, `SELECT millrace.enqueue(p_kind => 'bench', p_args => jsonb_build_object('id', $1::bigint, 'p', $2::text::jsonb), p_unique_key => $3)`,
		job.ID, p, key)
	return err
}

// WatchQueues implements bench.Watcher: what the dashboard's queues page
// reads at each refresh (ui's sampler): the queues within 5% of the time
// (an ops.Pacer, as the sampler's), their live counts (ops.LiveCounts) or,
// ten seconds after the last, history's counts too (ops.QueueCounts); then
// the last second's activity (ops.SampleSince). One goroutine calls it.
func (s *Strategy) WatchQueues(ctx context.Context, conn *pgx.Conn) error {
	if began := time.Now(); s.watchPace.Due(began) {
		read := ops.LiveCounts
		if began.Sub(s.watchFull) >= 10*time.Second {
			read, s.watchFull = ops.QueueCounts, began
		}
		if _, err := read(ctx, conn); err != nil {
			return err
		}
		s.watchPace.Took(began, time.Since(began))
	}
	_, err := ops.SampleSince(ctx, conn, time.Time{})
	return err
}

// FinalState is the state of millrace job ref (millrace.JobByID).
func (s *Strategy) FinalState(ctx context.Context, ref int64) (string, error) {
	j, err := millrace.JobByID(ctx, s.pool, ref)
	if err != nil {
		return "", err
	}
	return string(j.State), nil
}

// Retrying implements bench.Chaoser: the jobs among ids with a schedule
// row due after now less grace (a retry's backoff), or a
// retry promoted from one (a job row of a later attempt ready since then).
func (s *Strategy) Retrying(ctx context.Context, ids []int64, grace time.Duration) (map[int64]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT (s.args->>'id')::bigint FROM millrace.sched s
		WHERE s.due_at > now() - $2::interval AND (s.args->>'id')::bigint = ANY ($1)
		UNION
		SELECT (j.args->>'id')::bigint FROM millrace.job j
		WHERE j.attempt > 0 AND j.ready_at > now() - $2::interval AND (j.args->>'id')::bigint = ANY ($1)`, ids, grace)
	if err != nil {
		return nil, err
	}
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// Explain implements bench.Explainer: for each bench id, its rows in the
// queue's tables at the check (the live job row, the tick whose range
// holds it, that batch's holder and whether it is done, the job's acks,
// its schedule row).
func (s *Strategy) Explain(ctx context.Context, ids []int64) (map[int64]string, error) {
	rows, err := s.pool.Query(ctx, `
WITH b AS (SELECT unnest($1::bigint[]) AS bid)
SELECT b.bid, concat_ws('; ',
  (SELECT string_agg(format('job row id %s txid %s slot %s attempt %s ready %s, batch %s held by %s token %s%s',
                            j.id, j.txid, j.slot, j.attempt, to_char(j.ready_at, 'HH24:MI:SS.MS'), coalesce(t.tick_id::text, 'none'),
                            coalesce(h.owner::text, '-'), coalesce(h.token::text, '-'),
                            CASE WHEN EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = t.tick_id) THEN ' (done)' ELSE '' END), ', ')
   FROM millrace.job j
   LEFT JOIN LATERAL (SELECT t.tick_id FROM millrace.tick t
                      WHERE t.queue = j.queue AND t.priority = j.priority AND pg_visible_in_snapshot(j.txid, t.snap)
                        AND NOT pg_visible_in_snapshot(j.txid, t.prev_snap)
                        AND (t.after_txid IS NULL OR (j.txid, j.id) > (t.after_txid, t.after_id))
                        AND (j.txid, j.id) <= (t.upto_txid, t.upto_id)
                      ORDER BY t.tick_id LIMIT 1) t ON true
   LEFT JOIN LATERAL millrace.holder(t.tick_id) h ON t.tick_id IS NOT NULL
   WHERE (j.args->>'id')::bigint = b.bid),
  (SELECT 'acks ' || string_agg(format('%s in batch %s', a.state, a.tick_id), ', ')
   FROM millrace.ack a JOIN millrace.job j ON j.id = a.job_id WHERE (j.args->>'id')::bigint = b.bid),
  (SELECT 'scheduled ' || string_agg(format('attempt %s due %s', s.attempt, to_char(s.due_at, 'HH24:MI:SS.MS')), ', ')
   FROM millrace.sched s WHERE (s.args->>'id')::bigint = b.bid),
  (SELECT 'now ' || to_char(clock_timestamp(), 'HH24:MI:SS.MS')))
FROM b`, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var w string
		if err := rows.Scan(&id, &w); err != nil {
			return nil, err
		}
		out[id] = w
	}
	return out, rows.Err()
}

// EnqueueMix inserts jobs with one Insert, or several with one
// InsertMany, each scheduled at its RunAt and unique by its UniqueKey when
// they are set; a duplicate's reference is the millrace id of the job that
// blocked it.
func (s *Strategy) EnqueueMix(ctx context.Context, jobs []bench.Job) ([]bench.MixResult, error) {
	opts := func(j bench.Job) *millrace.InsertOpts {
		o := &millrace.InsertOpts{RunAt: j.RunAt}
		if j.UniqueKey != 0 {
			o.Unique = uniqueByU
		}
		return o
	}
	mixArgs := argsOf
	if len(jobs) == 1 {
		res, err := s.client.Load().Insert(ctx, mixArgs(jobs[0]), opts(jobs[0]))
		if err != nil {
			return nil, err
		}
		return []bench.MixResult{{Ref: res.ID, Duplicate: res.Duplicate}}, nil
	}
	params := make([]millrace.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = millrace.InsertManyParams{Args: mixArgs(j), Opts: opts(j)}
	}
	res, err := s.client.Load().InsertMany(ctx, params)
	if err != nil {
		return nil, err
	}
	out := make([]bench.MixResult, len(res))
	for i, r := range res {
		out[i] = bench.MixResult{Ref: r.ID, Duplicate: r.Duplicate}
	}
	return out, nil
}

// Cancel cancels job ref with millrace.Cancel: true when it was waiting
// (it never runs).
func (s *Strategy) Cancel(ctx context.Context, ref int64) (bool, string, error) {
	r, err := millrace.Cancel(ctx, s.pool, ref)
	return r == millrace.Cancelled, string(r), err
}

// EnqueueQueue inserts jobs on the named queue, one Insert each.
func (s *Strategy) EnqueueQueue(ctx context.Context, queue string, jobs []bench.Job) error {
	s.useQueue(queue)
	for _, j := range jobs {
		if _, err := s.client.Load().Insert(ctx, args{ID: j.ID, Payload: j.Payload}, &millrace.InsertOpts{Queue: queue}); err != nil {
			return err
		}
	}
	return nil
}

// EnqueueTx enqueues job on the default queue inside tx through the SQL
// API, as an application in any language would: it runs once tx commits.
func (s *Strategy) EnqueueTx(ctx context.Context, tx pgx.Tx, job bench.Job) error {
	p := "null"
	if len(job.Payload) > 0 {
		p = string(job.Payload)
	}
	_, err := tx.Exec(ctx, `SELECT millrace.enqueue(p_kind => 'bench', p_args => jsonb_build_object('id', $1::bigint, 'p', $2::text::jsonb))`, job.ID, p)
	return err
}

// Serve runs a client of its own on the strategy's pool that works queue
// with workers workers until ctx ends, then stops it gracefully.
func (s *Strategy) Serve(ctx context.Context, queue string, workers int, handle bench.Handler) error {
	s.useQueue(queue)
	c, err := s.newClient(s.pool, queue, workers, 0, handle, nil, 0)
	if err != nil {
		return err
	}
	detach := s.attach(c, s.pool)
	defer detach()
	if err := c.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return c.Stop(sctx)
}

// Remaining lists the bench ids of the jobs not yet finished (available,
// running or scheduled) on the queues the bench used, from the public view
// millrace.jobs.
func (s *Strategy) Remaining(ctx context.Context) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT DISTINCT (args->>'id')::bigint FROM millrace.jobs WHERE queue = ANY($1)`, s.queueNames())
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Close releases the pools.
func (s *Strategy) Close() error {
	for _, p := range []*pgxpool.Pool{s.pool, s.stats} {
		if p != nil {
			p.Close()
		}
	}
	return nil
}
