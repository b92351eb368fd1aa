package bench_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
)

// TestAcceptanceReadsNeverLie (issue 31, acceptance 2): polling
// millrace.jobs, `jobs show` and `jobs list --state scheduled` ten times a
// second through the full mix at 800 jobs/s, with the ring reclaiming a
// slot every few seconds, no finished job ever shows as unfinished.
//
// The run is `millrace bench --strategies millrace --scenario clean --rate
// 800 --warmup 5s --clean D --stress 0s --recovery 0s --mix
// fail=20,snooze=5,cancel=5,sched=20,unique=10` with the client's
// RotateAfter at 2 s (default 10 s). Beside it, for the whole run (the
// drain too), pollers on connections of their own read ten times a second
// each: what history holds final (completed, discarded, cancelled) since
// the last look; (a) SELECT id, state, attempt FROM millrace.jobs; (b)
// ops.GetJob, the read of `millrace jobs show`, for two finished jobs (the
// newest, and in turn one at random or one completed after a failed
// attempt); (c) ops.ListJobs with State "scheduled" and the command's
// largest limit, the read of `millrace jobs list --state scheduled --limit
// 1000`. A job that history had been seen to hold final before a read
// began and that the read shows live (available, running or scheduled) is
// a violation; so is `jobs show` not finding it. A failed or snoozed
// attempt is not final: such a job stays live with the same id. Each read
// is framed by two reads of millrace.ring_stats() on its connection: when
// the reclaim count moved between them, the read raced a reclaim. A read
// the leader cancels to reclaim a slot it holds (SQLSTATE 57014: the
// pollers read back to back, docs/deploy.md) is counted apart, not failed.
//
// D is 10 minutes, or MILLRACE_ACCEPT_FOR (a Go duration) for a shorter
// try:
//
//	MILLRACE_BENCH_ACCEPTANCE=1 MILLRACE_ACCEPT_FOR=60s go test -count=1 -timeout 30m -run TestAcceptanceReadsNeverLie -v ./internal/bench/
func TestAcceptanceReadsNeverLie(t *testing.T) {
	acceptance(t)
	dur := acceptFor(t, 10*time.Minute)
	url := testkit.EmptyDBURL(t)
	p := &readPoller{url: url, finished: map[int64]finalSeen{}}
	cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioClean,
		Rate: 800, Work: 10 * time.Millisecond, Warmup: 5 * time.Second, Clean: dur,
		Mix:         bench.Mix{Fail: 20, Snooze: 5, Cancel: 5, Sched: 20, Unique: 10},
		RotateAfter: 2 * time.Second, Out: t.TempDir(),
		// The guard hook runs for the strategy's whole run, from after its
		// Setup (the schema exists) until its workers have stopped.
		Guard: p.run}
	began := time.Now()
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(began)
	if p.err != nil {
		t.Fatalf("poller: %v", p.err)
	}

	ss := res.Summary.Strategies["millrace"]
	clean := ss.Phases[bench.PhaseClean]
	var rotations int64
	if clean.Rotations != nil {
		rotations = *clean.Rotations
	}
	t.Logf("run: %s clean phase (%s with warm-up, drain and stop): offered %.0f/s, completed %.0f/s; expected %d, completed %d; lost %d, run twice %d; %d rotations in the clean phase",
		time.Duration(clean.Seconds*float64(time.Second)).Round(time.Second), wall.Round(time.Second), clean.OfferedPerS, clean.CompletedPerS,
		clean.Expected, clean.Completed, ss.LostJobs, ss.DuplicateJobs, rotations)
	if d := res.MixDefects(); d != "" {
		t.Logf("mix defects: %s", d)
	}
	polled := p.last.Sub(p.first)
	var violations, bad int64
	for k := range readKinds {
		r := &p.kinds[k]
		violations += r.bad + r.notFound
		bad += r.errs
		t.Logf("%-15s %6d reads (%.1f/s, %d rows, mean %s), %d raced a reclaim; %d violations, %d not found; %d cancelled by the leader, %d other errors",
			readNames[k]+":", r.reads, float64(r.reads)/polled.Seconds(), r.rows, r.mean(), r.raced, r.bad, r.notFound, r.cancelled, r.errs)
	}
	t.Logf("ring: %d reclaims and %d rotations in %s of polling (a reclaim every %.1fs)",
		p.reclaims, p.rotations, polled.Round(time.Second), polled.Seconds()/float64(max(p.reclaims, 1)))
	t.Logf("history: %d refreshes (mean %s); %d jobs seen final (%d completed after a failed attempt); missed %d of the %d final at the end",
		p.refreshes, (p.refreshTook / time.Duration(max(p.refreshes, 1))).Round(time.Millisecond/10), len(p.finished), len(p.retried), p.missed, p.finalAtEnd)
	for _, v := range p.examples {
		t.Log("  " + v)
	}
	if violations > 0 {
		t.Errorf("%d reads showed a job finished before the read began as unfinished (or not at all)", violations)
	}
	if bad > 0 {
		t.Errorf("%d reads failed", bad)
	}
	if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
		t.Errorf("lost %d, run twice %d", ss.LostJobs, ss.DuplicateJobs)
	}
	if p.reclaims < 2 || p.kinds[readView].reads == 0 || len(p.finished) == 0 {
		t.Errorf("nothing was measured: %d reclaims, %d reads of the view, %d finished jobs", p.reclaims, p.kinds[readView].reads, len(p.finished))
	}
}

// The pollers' reads.
const (
	readView  = iota // SELECT id, state, attempt FROM millrace.jobs
	readShow         // ops.GetJob: millrace jobs show ID
	readList         // ops.ListJobs state scheduled: millrace jobs list --state scheduled
	readKinds = 3
)

var readNames = [readKinds]string{"view", "jobs show", "list scheduled"}

// finalSeen is a job seen final in history, by the gen-th history read.
type finalSeen struct {
	state string
	gen   int64
	at    time.Time // when that read ended
}

// historyOverlap is how far back of the newest finished_at it has seen the
// history poller reads again: a history row is written by a transaction
// that commits after its finished_at, and one committed late is found by
// the next look. What the overlap misses is counted at the end (missed);
// it only narrows what is checked, never makes a violation.
const historyOverlap = 5 * time.Second

// readLanes is the number of pollers of each read, each on a connection of
// its own, ticking every readLanes times 100 ms and staggered by 100 ms
// (together ten reads a second). One: a read that takes longer than its
// tick (the view's take tens of milliseconds, hundreds on a loaded
// machine) skips a tick. Two kept closer to ten a second on a two-core
// machine but held the ring: a reclaim skips a slot a reader has open,
// and with six readers a reclaim came every 8.4 s instead of 3.4 s.
const readLanes = 1

// kindStats are one read's counts, written by its poller only.
type kindStats struct {
	reads, rows, raced, bad, notFound, errs int64
	cancelled                               int64 // by the leader (57014), to reclaim a slot
	took                                    time.Duration
}

func (r *kindStats) mean() time.Duration {
	return (r.took / time.Duration(max(r.reads, 1))).Round(time.Millisecond / 10)
}

// readPoller is the pollers of TestAcceptanceReadsNeverLie. Its fields
// are read once run has returned.
type readPoller struct {
	url string

	mu       sync.Mutex
	gen      int64 // history reads done
	finished map[int64]finalSeen
	order    []int64 // finished ids, in the order seen
	retried  []int64 // finished ids completed after a failed attempt
	examples []string

	cursor              time.Time // the history poller's own
	refreshes           int64
	refreshTook         time.Duration
	kinds               [readKinds]kindStats // summed from lanes at the end
	lanes               [readKinds][readLanes]kindStats
	first, last         time.Time
	reclaims, rotations int64
	missed, finalAtEnd  int64
	err                 error
}

// run polls until ctx ends. A failure to connect or to read history or
// the ring stops it (err); a failed read of the three is counted. Reads
// run on a context of their own: when the run ends, each poller stops at
// its next tick (pgx would close a connection whose query is cancelled).
func (p *readPoller) run(ctx context.Context) error {
	qctx := context.WithoutCancel(ctx)
	conns := make([]*pgx.Conn, readKinds*readLanes+1)
	for i := range conns {
		cc, err := pgx.ParseConfig(p.url)
		if err != nil {
			p.err = err
			return err
		}
		cc.RuntimeParams["application_name"] = fmt.Sprintf("millrace-bench-poller-%d", i)
		if conns[i], err = pgx.ConnectConfig(qctx, cc); err != nil {
			p.err = err
			return err
		}
		defer conns[i].Close(context.Background())
	}
	hist := conns[len(conns)-1]
	rot0, rec0, err := ringStats(qctx, hist)
	if err != nil {
		p.err = err
		return err
	}
	if err := p.refresh(qctx, hist); err != nil {
		p.err = err
		return err
	}
	p.first = time.Now()
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	every := func(d, offset time.Duration, f func() error) error {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(offset):
		}
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			if err := f(); err != nil {
				return err
			}
		}
	}
	wg.Go(func() {
		errs[len(conns)-1] = every(100*time.Millisecond, 0, func() error { return p.refresh(qctx, hist) })
	})
	for k := range readKinds {
		for l := range readLanes {
			i := k*readLanes + l
			wg.Go(func() {
				n := 0
				errs[i] = every(readLanes*100*time.Millisecond, time.Duration(l)*100*time.Millisecond,
					func() error { n++; return p.read(qctx, conns[i], k, l, n) })
			})
		}
	}
	wg.Wait()
	p.last = time.Now()
	for k := range readKinds {
		for l := range readLanes {
			a, b := &p.kinds[k], p.lanes[k][l]
			a.reads, a.rows, a.raced, a.bad, a.notFound, a.errs = a.reads+b.reads, a.rows+b.rows, a.raced+b.raced, a.bad+b.bad, a.notFound+b.notFound, a.errs+b.errs
			a.cancelled += b.cancelled
			a.took += b.took
		}
	}
	if p.err = errors.Join(errs...); p.err != nil {
		return p.err
	}
	// The run is over (its workers have stopped) and the schema is still
	// there: the ring's counts, and what the incremental history read
	// missed.
	rot1, rec1, err := ringStats(qctx, hist)
	if err != nil {
		p.err = err
		return err
	}
	p.rotations, p.reclaims = rot1-rot0, rec1-rec0
	if err := p.refresh(qctx, hist); err != nil {
		p.err = err
		return err
	}
	if err := hist.QueryRow(qctx, `SELECT count(DISTINCT id) FROM millrace.history
		WHERE state IN ('completed', 'discarded', 'cancelled')`).Scan(&p.finalAtEnd); err != nil {
		p.err = fmt.Errorf("history: %w", err)
		return p.err
	}
	p.missed = p.finalAtEnd - int64(len(p.finished))
	return nil
}

func ringStats(ctx context.Context, conn *pgx.Conn) (rotations, reclaims int64, err error) {
	err = conn.QueryRow(ctx, "SELECT rotations, coalesce(reclaims, 0) FROM millrace.ring_stats()").Scan(&rotations, &reclaims)
	if err != nil {
		err = fmt.Errorf("ring_stats: %w", err)
	}
	return
}

// refresh adds the final attempts history holds since the newest
// finished_at seen, less historyOverlap.
func (p *readPoller) refresh(ctx context.Context, conn *pgx.Conn) error {
	began := time.Now()
	from := p.cursor.Add(-historyOverlap)
	if p.cursor.IsZero() {
		from = time.Time{}
	}
	rows, err := conn.Query(ctx, `SELECT id, state, attempt, finished_at FROM millrace.history
		WHERE finished_at >= $1 AND state IN ('completed', 'discarded', 'cancelled')`, from)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	type row struct {
		id       int64
		state    string
		attempt  int
		finished time.Time
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.state, &x.attempt, &x.finished)
	})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	for _, x := range got {
		if x.finished.After(p.cursor) {
			p.cursor = x.finished
		}
		if _, ok := p.finished[x.id]; ok {
			continue
		}
		p.finished[x.id] = finalSeen{state: x.state, gen: p.gen, at: now}
		p.order = append(p.order, x.id)
		if x.attempt > 1 && x.state == "completed" {
			p.retried = append(p.retried, x.id)
		}
	}
	p.refreshes++
	p.refreshTook += now.Sub(began)
	return nil
}

// final says whether job id was seen final by a history read that ended
// before gen+1 began, and how.
func (p *readPoller) final(id, gen int64) (finalSeen, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.finished[id]
	return f, ok && f.gen <= gen
}

func (p *readPoller) violation(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.examples) < 20 {
		p.examples = append(p.examples, s)
	}
}

// failed counts a failed read: one the leader cancelled to reclaim a slot
// (SQLSTATE 57014, what docs/deploy.md says a reader of the ring's tables
// may get, to retry) apart from the others, which fail the test.
func (p *readPoller) failed(r *kindStats, kind int, err error) {
	if cancelled(err) {
		r.cancelled++
		return
	}
	r.errs++
	p.violation(fmt.Sprintf("%s: read failed: %v", readNames[kind], err))
}

// cancelled says err is a statement cancelled (SQLSTATE 57014). The leader
// cancels a reader that blocks a reclaim; the cancel may land on the
// reader's next statement (the ring_stats that frames a read).
func cancelled(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// read makes read kind once (the n-th tick of its lane) on conn, checked
// against what history was seen to hold final before it began.
func (p *readPoller) read(ctx context.Context, conn *pgx.Conn, kind, lane, n int) error {
	r := &p.lanes[kind][lane]
	type shown struct {
		id      int64
		state   string
		attempt int
	}
	var ids []int64 // jobs show's
	p.mu.Lock()
	gen := p.gen
	if m := len(p.order); m > 0 {
		ids = append(ids, p.order[m-1])
		if n%2 == 1 || len(p.retried) == 0 {
			ids = append(ids, p.order[rand.IntN(m)])
		} else {
			ids = append(ids, p.retried[rand.IntN(len(p.retried))])
		}
	}
	p.mu.Unlock()
	_, rec0, err := ringStats(ctx, conn)
	if cancelled(err) {
		r.cancelled++
		return nil
	} else if err != nil {
		return err
	}
	began := time.Now()
	var got []shown
	switch kind {
	case readView:
		rows, err := conn.Query(ctx, "SELECT id, state, attempt FROM millrace.jobs")
		if err == nil {
			got, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (shown, error) {
				var x shown
				return x, r.Scan(&x.id, &x.state, &x.attempt)
			})
		}
		if err != nil {
			p.failed(r, kind, err)
			return nil
		}
		r.reads++
	case readShow:
		for _, id := range ids {
			d, err := ops.GetJob(ctx, conn, id)
			switch {
			case errors.Is(err, ops.ErrNotFound):
				r.reads++
				r.notFound++
				f, _ := p.final(id, gen)
				p.violation(fmt.Sprintf("%s: job %d not found, %s in history seen %s before the read",
					readNames[kind], id, f.state, began.Sub(f.at).Round(time.Millisecond)))
			case err != nil:
				p.failed(r, kind, err)
			default:
				r.reads++
				if d.Live != nil {
					got = append(got, shown{id, d.Live.State, d.Live.Attempt})
				}
			}
		}
	case readList:
		list, err := ops.ListJobs(ctx, conn, ops.Filter{State: "scheduled", Limit: 1000})
		if err != nil {
			p.failed(r, kind, err)
			return nil
		}
		r.reads++
		for _, j := range list {
			got = append(got, shown{j.ID, j.State, j.Attempt})
		}
	}
	r.took += time.Since(began)
	r.rows += int64(len(got))
	_, rec1, err := ringStats(ctx, conn)
	if cancelled(err) {
		r.cancelled++
		rec1 = -1 // unknown: count it as raced
	} else if err != nil {
		return err
	}
	raced := rec1 != rec0
	if raced {
		r.raced++
	}
	for _, x := range got {
		if f, ok := p.final(x.id, gen); ok {
			r.bad++
			p.violation(fmt.Sprintf("%s: job %d shown %s (attempt %d), %s in history seen %s before the read (raced a reclaim: %t)",
				readNames[kind], x.id, x.state, x.attempt, f.state, began.Sub(f.at).Round(time.Millisecond), raced))
		}
	}
	return nil
}
