package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limit is --limit: the concurrency limit the bench sets on the strategy's
// queue (a Limiter's), across every process.
type Limit struct {
	// Running is the most jobs of the queue that may run at once across
	// every process (0: none).
	Running int `json:"running,omitempty"`
	// Rate is the most jobs that may start per Per (0: none).
	Rate int           `json:"rate,omitempty"`
	Per  time.Duration `json:"per_ns,omitempty"`
	// PerKey is the most jobs of one key that may run at once across
	// every process (0: none), the key being the args field Key, whose
	// value the producer spreads over Keys keys (the job's bench id
	// modulo Keys).
	PerKey int    `json:"per_key,omitempty"`
	Key    string `json:"key,omitempty"`
	Keys   int    `json:"keys,omitempty"`
	// KeyRate is the most jobs of one key that may start per KeyPer (0:
	// none), keyed as PerKey is.
	KeyRate int           `json:"key_rate,omitempty"`
	KeyPer  time.Duration `json:"key_per_ns,omitempty"`
	// Hot is a backlog of one key (HotKey) inserted before the run's
	// phases, for a per-key limit to hold back while the producer's jobs
	// (the other keys) go on. Its jobs are not the producer's: the
	// summary's latencies and counts are the producer's jobs', and
	// hot_done counts the backlog's runs.
	Hot int64 `json:"hot,omitempty"`
}

// HotKey is the key of the --limit hot=N backlog's jobs.
const HotKey = -1

// keyed says a per-key limit is set.
func (l Limit) keyed() bool { return l.PerKey != 0 || l.KeyRate != 0 }

// Zero reports whether no limit is set.
func (l Limit) Zero() bool { return l == Limit{} }

// KeyOf is the key the producer gives job id under a per-key limit (0:
// none).
func (l Limit) KeyOf(id int64) int64 {
	switch {
	case !l.keyed() || l.Keys <= 0:
		return 0
	case id < 0:
		return HotKey // the hot backlog's jobs have negative ids
	}
	return 1 + id%int64(l.Keys)
}

// String is the limit in --limit syntax.
func (l Limit) String() string {
	var parts []string
	if l.Running != 0 {
		parts = append(parts, fmt.Sprintf("running=%d", l.Running))
	}
	if l.Rate != 0 {
		parts = append(parts, fmt.Sprintf("rate=%d/%s", l.Rate, l.Per))
	}
	if l.PerKey != 0 {
		parts = append(parts, fmt.Sprintf("per-key=%d", l.PerKey))
	}
	if l.KeyRate != 0 {
		parts = append(parts, fmt.Sprintf("key-rate=%d/%s", l.KeyRate, l.KeyPer))
	}
	if l.keyed() {
		parts = append(parts, fmt.Sprintf("key=%s,keys=%d", l.Key, l.Keys))
	}
	if l.Hot != 0 {
		parts = append(parts, fmt.Sprintf("hot=%d", l.Hot))
	}
	return strings.Join(parts, ",")
}

// ParseLimit parses --limit: comma-separated running=N, the most jobs of
// the queue running at once across every process (1 to 1,000,000),
// rate=N/PERIOD, the most jobs starting per PERIOD (a Go duration, 10ms to
// 24h), per-key=N, the most jobs of one key running at once, and
// key-rate=N/PERIOD, the most jobs of one key starting per PERIOD, with
// key=ARG, the args field that holds the key (default customer_id),
// keys=K, how many keys the producer spreads the jobs over (default 1000),
// and hot=N, a backlog of N jobs of one more key inserted before the
// run. An empty string is no limit.
func ParseLimit(s string) (Limit, error) {
	var l Limit
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Limit{}, fmt.Errorf("--limit %q: %q is not KEY=VALUE", s, part)
		}
		switch strings.TrimSpace(k) {
		case "running":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1000000 {
				return Limit{}, fmt.Errorf("--limit %q: running=%q: want a whole number from 1 to 1000000", s, v)
			}
			if l.Running != 0 {
				return Limit{}, fmt.Errorf("--limit %q: running given twice", s)
			}
			l.Running = n
		case "rate":
			ns, ps, ok := strings.Cut(strings.TrimSpace(v), "/")
			n, err := strconv.Atoi(ns)
			per, perr := time.ParseDuration(ps)
			if !ok || err != nil || perr != nil || n < 1 || n > 1000000 || per < 10*time.Millisecond || per > 24*time.Hour {
				return Limit{}, fmt.Errorf("--limit %q: rate=%q: want N/PERIOD, N from 1 to 1000000 and PERIOD from 10ms to 24h (e.g. 100/1s)", s, v)
			}
			if l.Rate != 0 {
				return Limit{}, fmt.Errorf("--limit %q: rate given twice", s)
			}
			l.Rate, l.Per = n, per
		case "key-rate":
			ns, ps, ok := strings.Cut(strings.TrimSpace(v), "/")
			n, err := strconv.Atoi(ns)
			per, perr := time.ParseDuration(ps)
			if !ok || err != nil || perr != nil || n < 1 || n > 1000000 || per < 10*time.Millisecond || per > 24*time.Hour || l.KeyRate != 0 {
				return Limit{}, fmt.Errorf("--limit %q: key-rate=%q: want N/PERIOD once, N from 1 to 1000000 and PERIOD from 10ms to 24h (e.g. 100/1s)", s, v)
			}
			l.KeyRate, l.KeyPer = n, per
		case "hot":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 1 || n > 10000000 || l.Hot != 0 {
				return Limit{}, fmt.Errorf("--limit %q: hot=%q: want a whole number from 1 to 10000000, once", s, v)
			}
			l.Hot = n
		case "per-key":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1000000 || l.PerKey != 0 {
				return Limit{}, fmt.Errorf("--limit %q: per-key=%q: want a whole number from 1 to 1000000, once", s, v)
			}
			l.PerKey = n
		case "key":
			v = strings.TrimSpace(v)
			if v == "" || len(v) > 63 || strings.ContainsAny(v, "\"\\") || l.Key != "" {
				return Limit{}, fmt.Errorf("--limit %q: key=%q: want an args field name of 1 to 63 bytes, once", s, v)
			}
			l.Key = v
		case "keys":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1000000 || l.Keys != 0 {
				return Limit{}, fmt.Errorf("--limit %q: keys=%q: want a whole number from 1 to 1000000, once", s, v)
			}
			l.Keys = n
		default:
			return Limit{}, fmt.Errorf("--limit %q: unknown key %q (have: running, rate, per-key, key-rate, key, keys, hot)", s, k)
		}
	}
	if !l.keyed() && (l.Key != "" || l.Keys != 0 || l.Hot != 0) {
		return Limit{}, fmt.Errorf("--limit %q: key, keys and hot go with per-key=N or key-rate=N/PERIOD", s)
	}
	if l.keyed() {
		l.Key = cmp.Or(l.Key, "customer_id")
		l.Keys = cmp.Or(l.Keys, 1000)
	}
	return l, nil
}

// Limiter is a strategy that can run under a concurrency limit (--limit):
// Work sets Env.Limit on its queue before its workers claim.
type Limiter interface {
	Limits() bool
}

// gauge counts jobs running now and the most seen at once, from the
// bench's own handler: a job runs from its handler's start to its end.
type gauge struct {
	now, most atomic.Int64
}

// enter counts a job that starts.
func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			return
		}
	}
}

// leave counts a job that ends.
func (g *gauge) leave() { g.now.Add(-1) }

// keyGauges counts, per key of a per-key limit, the jobs running now and
// the most seen at once.
type keyGauges struct {
	mu sync.Mutex
	g  map[int64]*gauge
}

// of is key's gauge.
func (k *keyGauges) of(key int64) *gauge {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.g == nil {
		k.g = map[int64]*gauge{}
	}
	g := k.g[key]
	if g == nil {
		g = &gauge{}
		k.g[key] = g
	}
	return g
}

// most is the most jobs of any one key seen running at once.
func (k *keyGauges) most() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var m int64
	for _, g := range k.g {
		m = max(m, g.most.Load())
	}
	return m
}

// startLog records when jobs start, to find the most that started in any
// window of a rate's period (--limit rate=N/PERIOD); it records nothing
// when per is 0.
type startLog struct {
	per   time.Duration
	mu    sync.Mutex
	times []time.Time
}

// add records a start.
func (l *startLog) add(t time.Time) {
	if l.per <= 0 {
		return
	}
	l.mu.Lock()
	l.times = append(l.times, t)
	l.mu.Unlock()
}

// most is the most starts within any window of per.
func (l *startLog) most() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := slices.Clone(l.times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, lo := 0, 0; i < len(ts); i++ {
		for ts[i].Sub(ts[lo]) >= l.per {
			lo++
		}
		most = max(most, i-lo+1)
	}
	return int64(most)
}

// keyStarts records, per key of a per-key rate, when its jobs start, to
// find the most of one key that started in any window of the rate's
// period; it records nothing when per is 0.
type keyStarts struct {
	per  time.Duration
	mu   sync.Mutex
	logs map[int64]*startLog
}

// add records a start of key's job.
func (k *keyStarts) add(key int64, t time.Time) {
	if k.per <= 0 {
		return
	}
	k.mu.Lock()
	if k.logs == nil {
		k.logs = map[int64]*startLog{}
	}
	l := k.logs[key]
	if l == nil {
		l = &startLog{per: k.per}
		k.logs[key] = l
	}
	k.mu.Unlock()
	l.add(t)
}

// most is the most starts of one key within any window of per.
func (k *keyStarts) most() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var m int64
	for _, l := range k.logs {
		m = max(m, l.most())
	}
	return m
}
