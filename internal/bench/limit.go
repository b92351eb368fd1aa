package bench

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Limit is --limit: the concurrency limit the bench sets on the strategy's
// queue (a Limiter's), across every process.
type Limit struct {
	// Running is the most jobs of the queue that may run at once across
	// every process (0: none).
	Running int `json:"running,omitempty"`
}

// Zero reports whether no limit is set.
func (l Limit) Zero() bool { return l == Limit{} }

// String is the limit in --limit syntax.
func (l Limit) String() string {
	if l.Running == 0 {
		return ""
	}
	return fmt.Sprintf("running=%d", l.Running)
}

// ParseLimit parses --limit: running=N, the most jobs of the queue running
// at once across every process (1 to 1,000,000). An empty string is no
// limit.
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
		default:
			return Limit{}, fmt.Errorf("--limit %q: unknown key %q (have: running)", s, k)
		}
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
