package millraceprom

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/prometheus/client_golang/prometheus"
)

// dbCollector serves the metrics read at scrape time: the leader status of
// the attached clients, and what is read from the database (queue depth,
// the ring), each read at most once per its interval and served from
// that read in between.
type dbCollector struct {
	opts Options

	srcMu    sync.Mutex
	attached []*attachment // newest last

	leader, dropped                                  *prometheus.Desc
	queueJobs, queuePaused, countsDuration           *prometheus.Desc
	queueLimit, queueHeld                            *prometheus.Desc
	perKey, keysRunning, keysFull, deferred, keyRate *prometheus.Desc
	rateLimit, rateStarted                           *prometheus.Desc
	ringSlot, ringRotations, ringReclaims            *prometheus.Desc
	ringRotatedAt, ringReclaimedAt                   *prometheus.Desc
	ringRotationAge, ringReclaimAge, slotBys         *prometheus.Desc
	readErrors                                       *prometheus.CounterVec

	mu sync.Mutex // held through a scrape's reads

	depthAt   time.Time // when depth was last read (or tried)
	depth     []millrace.QueueCount
	limits    []millrace.QueueLimit
	depthOK   bool
	depthTook time.Duration

	ringAt  time.Time // when the ring was last read (or tried)
	ring    millrace.Stats
	ringOK  bool
	skew    time.Duration // database clock minus ours, at ringAt
	slots   []slotSize
	slotsOK bool
}

type slotSize struct {
	slot  int
	bytes int64
}

// The read label of millrace_metrics_read_errors_total.
const (
	readQueueCounts = "queue_counts"
	readRing        = "ring"
	readSlotSizes   = "slot_sizes"
)

func newDBCollector(opts Options) *dbCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	c := &dbCollector{opts: opts,
		leader: d("millrace_leader", "1 if an attached client of this process is the maintenance leader now, else 0."),
		dropped: d("millrace_events_dropped_total",
			"Job events the attached clients dropped because a subscriber fell behind (outcome metrics then undercount)."),
		queueJobs: d("millrace_queue_jobs",
			"Jobs per queue and state from millrace.QueueCounts: available, running and scheduled; completed and discarded while history keeps them. Read at most once per DepthInterval.",
			"queue", "state"),
		queuePaused: d("millrace_queue_paused", "1 if the queue is paused, else 0.", "queue"),
		queueLimit: d("millrace_queue_running_limit",
			"The queue's concurrency limit across every process (millrace.SetLimit); only queues that have one.", "queue"),
		rateLimit: d("millrace_queue_rate_limit_per_second",
			"The queue's rate limit across every process (starts per period, as per second); only queues that have one.", "queue"),
		rateStarted: d("millrace_queue_rate_started",
			"Jobs of a rate-limited queue claimed in its current window (the period and a slack; see millrace.rate_window).", "queue"),
		queueHeld: d("millrace_queue_running_held",
			"Slots of a queue's running limit the live processes hold (each runs at most its slots at once): never fewer than run, at most the limit.", "queue"),
		perKey: d("millrace_queue_per_key_limit",
			"The queue's per-key concurrency limit across every process (jobs of one key running at once); only queues that have one.", "queue"),
		keysRunning: d("millrace_queue_keys_running",
			"Keys of a queue's per-key limit with a job held by a live process.", "queue"),
		keysFull: d("millrace_queue_keys_full",
			"Keys of a queue's per-key limit at the limit: their next jobs wait in the schedule.", "queue"),
		deferred: d("millrace_queue_key_deferred_jobs",
			"Jobs of a queue that its per-key limit or rate deferred and that wait in the schedule.", "queue"),
		keyRate: d("millrace_queue_key_rate_limit_per_second",
			"The queue's per-key rate across every process (starts of one key per period, as per second); only queues that have one.", "queue"),
		countsDuration: d("millrace_queue_counts_duration_seconds", "How long the last read of queue depth took."),
		ringSlot:       d("millrace_ring_current_slot", "The slot of the ring producers write into now."),
		ringRotations:  d("millrace_ring_rotations_total", "Rotations of the ring since the schema was installed (database-wide)."),
		ringReclaims:   d("millrace_ring_reclaims_total", "Slots of the ring emptied by TRUNCATE since the schema was installed (database-wide)."),
		ringRotatedAt:  d("millrace_ring_last_rotation_timestamp_seconds", "When the current slot became current, in Unix seconds (database clock)."),
		ringReclaimedAt: d("millrace_ring_last_reclaim_timestamp_seconds",
			"When a slot was last emptied, in Unix seconds (database clock)."),
		ringRotationAge: d("millrace_ring_rotation_age_seconds",
			"Seconds since the last rotation of the ring; it should stay below about RotateAfter plus MaintenanceEvery."),
		ringReclaimAge: d("millrace_ring_reclaim_age_seconds", "Seconds since a slot of the ring was last emptied."),
		slotBys: d("millrace_ring_slot_bytes",
			"Bytes of each slot of the ring: pg_total_relation_size summed over the slot's partitions (jobs, ticks, leases, acks ...).", "slot"),
		readErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "millrace_metrics_read_errors_total",
			Help: "Reads of the database for metrics that failed, by read (queue_counts, ring, slot_sizes); their metrics are left out until a read succeeds.",
		}, []string{"read"}),
	}
	for _, r := range []string{readQueueCounts, readRing, readSlotSizes} {
		c.readErrors.WithLabelValues(r)
	}
	return c
}

func (c *dbCollector) attach(a *attachment) {
	c.srcMu.Lock()
	c.attached = append(c.attached, a)
	c.srcMu.Unlock()
}

func (c *dbCollector) detach(a *attachment) {
	c.srcMu.Lock()
	c.attached = slices.DeleteFunc(c.attached, func(x *attachment) bool { return x == a })
	c.srcMu.Unlock()
}

// sources returns the attached clients, newest first.
func (c *dbCollector) sources() []*attachment {
	c.srcMu.Lock()
	defer c.srcMu.Unlock()
	out := slices.Clone(c.attached)
	slices.Reverse(out)
	return out
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.dropped, c.queueJobs, c.queuePaused, c.countsDuration, c.queueLimit, c.queueHeld, c.perKey, c.keysRunning, c.keysFull, c.deferred, c.keyRate, c.rateLimit, c.rateStarted,
		c.ringSlot, c.ringRotations, c.ringReclaims, c.ringRotatedAt, c.ringReclaimedAt,
		c.ringRotationAge, c.ringReclaimAge, c.slotBys} {
		ch <- d
	}
	c.readErrors.Describe(ch)
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.readErrors.Collect(ch)
	srcs := c.sources()
	if len(srcs) == 0 {
		return
	}
	leading := false
	var dropped int64
	for _, a := range srcs {
		leading = leading || a.client.Leader()
		dropped += a.client.DroppedEvents()
	}
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, b2f(leading))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(dropped))

	pool := srcs[0].pool
	o := &c.opts
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.DepthInterval > 0 && (leading || !o.DepthOnLeader) {
		if time.Since(c.depthAt) >= o.DepthInterval {
			c.readDepth(pool)
		}
		if c.depthOK {
			for _, q := range c.depth {
				for _, s := range []struct {
					state string
					n     int64
				}{{"available", q.Available}, {"running", q.Running}, {"scheduled", q.Scheduled},
					{"completed", q.Completed}, {"discarded", q.Discarded}, {"cancelled", q.Cancelled}} {
					ch <- prometheus.MustNewConstMetric(c.queueJobs, prometheus.GaugeValue, float64(s.n), q.Queue, s.state)
				}
				ch <- prometheus.MustNewConstMetric(c.queuePaused, prometheus.GaugeValue, b2f(q.Paused), q.Queue)
			}
			for _, l := range c.limits {
				if l.Limit.Running > 0 {
					ch <- prometheus.MustNewConstMetric(c.queueLimit, prometheus.GaugeValue, float64(l.Limit.Running), l.Queue)
					ch <- prometheus.MustNewConstMetric(c.queueHeld, prometheus.GaugeValue, float64(l.Held), l.Queue)
				}
				if l.Limit.PerKey > 0 {
					ch <- prometheus.MustNewConstMetric(c.perKey, prometheus.GaugeValue, float64(l.Limit.PerKey), l.Queue)
					ch <- prometheus.MustNewConstMetric(c.keysRunning, prometheus.GaugeValue, float64(l.KeysRunning), l.Queue)
					ch <- prometheus.MustNewConstMetric(c.keysFull, prometheus.GaugeValue, float64(l.KeysFull), l.Queue)
				}
				if l.Limit.PerKey > 0 || l.Limit.KeyRate > 0 {
					ch <- prometheus.MustNewConstMetric(c.deferred, prometheus.GaugeValue, float64(l.Deferred), l.Queue)
				}
				if l.Limit.KeyRate > 0 {
					ch <- prometheus.MustNewConstMetric(c.keyRate, prometheus.GaugeValue, float64(l.Limit.KeyRate)/l.Limit.KeyPer.Seconds(), l.Queue)
				}
				if l.Limit.Rate > 0 {
					ch <- prometheus.MustNewConstMetric(c.rateLimit, prometheus.GaugeValue, float64(l.Limit.Rate)/l.Limit.Per.Seconds(), l.Queue)
					ch <- prometheus.MustNewConstMetric(c.rateStarted, prometheus.GaugeValue, float64(l.Started), l.Queue)
				}
			}
			ch <- prometheus.MustNewConstMetric(c.countsDuration, prometheus.GaugeValue, c.depthTook.Seconds())
		}
	}
	if o.RingInterval > 0 {
		if time.Since(c.ringAt) >= o.RingInterval {
			c.readRing(pool)
		}
		if c.ringOK {
			r := &c.ring
			// Ages on the database's clock: now there is our clock plus
			// the skew measured when the ring was read.
			now := time.Now().Add(c.skew)
			ch <- prometheus.MustNewConstMetric(c.ringSlot, prometheus.GaugeValue, float64(r.CurrentSlot))
			ch <- prometheus.MustNewConstMetric(c.ringRotations, prometheus.CounterValue, float64(r.Rotations))
			ch <- prometheus.MustNewConstMetric(c.ringReclaims, prometheus.CounterValue, float64(r.Reclaims))
			ch <- prometheus.MustNewConstMetric(c.ringRotatedAt, prometheus.GaugeValue, unix(r.CurrentSince))
			ch <- prometheus.MustNewConstMetric(c.ringRotationAge, prometheus.GaugeValue, max(0, now.Sub(r.CurrentSince).Seconds()))
			if !r.LastReclaim.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.ringReclaimedAt, prometheus.GaugeValue, unix(r.LastReclaim))
				ch <- prometheus.MustNewConstMetric(c.ringReclaimAge, prometheus.GaugeValue, max(0, now.Sub(r.LastReclaim).Seconds()))
			}
		}
		if c.slotsOK {
			for _, s := range c.slots {
				ch <- prometheus.MustNewConstMetric(c.slotBys, prometheus.GaugeValue, float64(s.bytes), strconv.Itoa(s.slot))
			}
		}
	}
}

func (c *dbCollector) readDepth(pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ReadTimeout)
	defer cancel()
	start := time.Now()
	counts, err := millrace.QueueCounts(ctx, pool)
	var limits []millrace.QueueLimit
	if err == nil {
		limits, err = millrace.Limits(ctx, pool)
	}
	c.depthAt = time.Now()
	if err != nil {
		c.depthOK = false
		c.readErrors.WithLabelValues(readQueueCounts).Inc()
		return
	}
	c.depth, c.limits, c.depthOK, c.depthTook = counts, limits, true, c.depthAt.Sub(start)
}

// slotSizesSQL sums pg_total_relation_size over the partitions of every
// table of the schema partitioned by slot, per slot. It reads only the
// catalog (no privilege on the schema's tables or functions is needed),
// but each size takes an ACCESS SHARE lock on its partition for the
// statement: a TRUNCATE of that slot in the meantime (NOWAIT) is skipped
// and retried by the leader, and the statement gives up rather than
// queue behind one.
const slotSizesSQL = `SELECT substring(c.relname FROM '_([0-9]+)$')::int AS slot,
	sum(pg_total_relation_size(c.oid))::bigint, statement_timestamp()
FROM pg_partitioned_table pt
JOIN pg_class p ON p.oid = pt.partrelid
JOIN pg_namespace n ON n.oid = p.relnamespace AND n.nspname = 'millrace'
JOIN pg_attribute a ON a.attrelid = p.oid AND a.attnum = pt.partattrs[0] AND a.attname = 'slot'
JOIN pg_inherits i ON i.inhparent = p.oid
JOIN pg_class c ON c.oid = i.inhrelid
WHERE c.relname ~ '_[0-9]+$'
GROUP BY 1 ORDER BY 1`

func (c *dbCollector) readRing(pool *pgxpool.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ReadTimeout)
	defer cancel()
	st, err := millrace.ReadStats(ctx, pool)
	c.ringAt = time.Now()
	c.ring, c.ringOK = st, err == nil
	if err != nil {
		c.readErrors.WithLabelValues(readRing).Inc()
	}
	var sizes []slotSize
	var dbNow time.Time
	before := time.Now()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '200ms'"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, slotSizesSQL)
		if err != nil {
			return err
		}
		for rows.Next() {
			var s slotSize
			if err := rows.Scan(&s.slot, &s.bytes, &dbNow); err != nil {
				rows.Close()
				return err
			}
			sizes = append(sizes, s)
		}
		return rows.Err()
	})
	after := time.Now()
	c.slots, c.slotsOK = sizes, err == nil
	if err != nil {
		c.readErrors.WithLabelValues(readSlotSizes).Inc()
		c.skew = 0
		return
	}
	if !dbNow.IsZero() {
		c.skew = dbNow.Sub(before.Add(after.Sub(before) / 2))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
