package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Scenario names.
const (
	ScenarioClean      = "clean"
	ScenarioIdleXid    = "idle-xid"
	ScenarioRRSnapshot = "rr-snapshot"
	ScenarioAnalytics  = "analytics"
	ScenarioStandby    = "standby"
	ScenarioBurndown   = "burndown"
	ScenarioStall      = "stall"
	ScenarioChaos      = "chaos"
)

// Scenarios lists the scenario names with what their stress phase does.
var Scenarios = map[string]string{
	ScenarioClean:      "no stress: the baseline",
	ScenarioIdleXid:    "a session does BEGIN; INSERT; and sits idle, holding an xid",
	ScenarioRRSnapshot: "a REPEATABLE READ transaction takes a snapshot and sits idle",
	ScenarioAnalytics:  "REPEATABLE READ readers that take a transaction id and scan (--readers, default 3, of --reader-duration, default 120 s, --reader-interval apart; --reader-readonly: no id), by default always overlapping; refused readers retry",
	ScenarioStandby:    "a hot standby with hot_standby_feedback=on holds a REPEATABLE READ snapshot",
	ScenarioBurndown:   "no producer: --jobs N are inserted first, then worked down",
	ScenarioChaos:      "the workers run as --processes OS processes (at least 2); the stress kills one (SIGKILL), stops the leader past its lease (SIGSTOP), terminates the strategy's backends, restarts Postgres (own cluster only), runs jobs that crash their process and a unique enqueue in a transaction held open (millrace only; needs --rate N)",
	ScenarioStall:      "a job that runs the whole phase, a queue nobody works (5 jobs/s) and a transaction that enqueues early and commits late (millrace only)",
}

// Application names of the bench's stress sessions, so that a guard policy
// can match them and a run can check none is left behind.
const (
	AppLongrunner = "millrace-bench-longrunner"
	AppAnalytics  = "millrace-bench-analytics"
	AppStall      = "millrace-bench-stall"
)

// AppNames are the application names of every stress session the bench
// opens.
var AppNames = []string{AppLongrunner, AppAnalytics, AppStall, AppChaos}

// setupSQL creates the bench's own small schema: a table the idle-xid
// session writes to and the table the analytics readers scan.
const setupSQL = `
CREATE SCHEMA IF NOT EXISTS millrace_bench;
CREATE TABLE IF NOT EXISTS millrace_bench.holder (x int);
CREATE TABLE IF NOT EXISTS millrace_bench.facts (id int PRIMARY KEY, account int, amount int);
INSERT INTO millrace_bench.facts
  SELECT g, g % 9973, (g * 7919) % 1000 FROM generate_series(1, 200000) g
  WHERE NOT EXISTS (SELECT 1 FROM millrace_bench.facts LIMIT 1);
ANALYZE millrace_bench.facts;`

// ReaderStats counts the analytics scenario's reports. A report is one
// REPEATABLE READ transaction that takes a transaction id (unless
// read-only) and reads for the reader duration; an
// attempt the server cancels or terminates (a guard refusing it) is retried
// with a new transaction after a second, as a reporting job would, until
// the report finishes or the phase ends.
type ReaderStats struct {
	// Sessions, DurationS and IntervalS are the scenario's settings: reader
	// sessions, how long a report reads, and the time between report starts.
	Sessions  int     `json:"sessions"`
	DurationS float64 `json:"duration_s"`
	IntervalS float64 `json:"interval_s"`
	// ReadOnly is set when the readers were READ ONLY transactions without
	// a transaction id (--reader-readonly); by default each takes one.
	ReadOnly bool `json:"read_only,omitempty"`
	// Reports counts the reports begun; Finished those that ran their
	// whole duration; Unfinished those still running, or waiting to retry,
	// when the phase ended.
	Reports    int64 `json:"reports"`
	Finished   int64 `json:"finished"`
	Unfinished int64 `json:"unfinished"`
	// Started counts attempts (transactions) begun: first attempts and
	// retries. Cancelled counts attempts the server cancelled or terminated,
	// or whose connection failed (refused); Retried the cancelled attempts
	// that were started again.
	Started   int64 `json:"started"`
	Cancelled int64 `json:"cancelled"`
	Retried   int64 `json:"retried"`
}

// Analytics configures the analytics scenario's readers. Zero fields take
// the defaults: 3 readers of 120 s (or of the stress phase, when that is
// shorter), started Duration/Readers apart.
type Analytics struct {
	// Readers is how many reader sessions run reports (default 3).
	Readers int
	// Duration is how long one report reads (default 120 s, at most the
	// stress phase).
	Duration time.Duration
	// Interval is the time between report starts (default
	// Duration/Readers, so that the readers always overlap).
	Interval time.Duration
	// ReadOnly makes each report a READ ONLY transaction that never takes a
	// transaction id (--reader-readonly). By default a report takes one as
	// its first statement (SELECT pg_current_xact_id()), as a report that
	// writes a summary row or a temp table does: a snapshot taken while it
	// runs then has its id as xmin, so overlapping readers hold the horizon
	// longer than one report (docs/guard.md).
	ReadOnly bool
}

// Default analytics settings.
const (
	DefaultReaders        = 3
	DefaultReaderDuration = 120 * time.Second
)

// resolve fills in the defaults for a stress phase of the given length.
func (a Analytics) resolve(phase time.Duration) Analytics {
	if a.Readers <= 0 {
		a.Readers = DefaultReaders
	}
	if a.Duration <= 0 {
		a.Duration = DefaultReaderDuration
		if phase > 0 {
			a.Duration = min(a.Duration, phase)
		}
	}
	if a.Interval <= 0 {
		a.Interval = a.Duration / time.Duration(a.Readers)
	}
	return a
}

// check reports a setting that cannot run, naming its command-line flag.
func (a Analytics) check(phase time.Duration) error {
	switch {
	case a.Readers < 0:
		return fmt.Errorf("--readers %d: want at least 1", a.Readers)
	case a.Duration < 0:
		return fmt.Errorf("--reader-duration %s: want a positive duration", a.Duration)
	case a.Interval < 0:
		return fmt.Errorf("--reader-interval %s: want a positive duration", a.Interval)
	case a.Duration > 0 && phase > 0 && a.Duration > phase:
		return fmt.Errorf("--reader-duration %s is longer than --stress %s: no report could finish", a.Duration, phase)
	}
	return nil
}

// stress pins the horizon during the stress phase.
type stress interface {
	// start pins the horizon; it returns once the pin is in place.
	start(ctx context.Context) error
	// release ends the pin and closes every session stress opened.
	release()
}

func newStress(scenario, url, standbyURL string, phase time.Duration, an Analytics) (stress, error) {
	switch scenario {
	case ScenarioClean, ScenarioBurndown:
		return nil, nil
	case ScenarioStall:
		return nil, nil // needs the strategy: see newStall
	case ScenarioChaos:
		return nil, nil // needs the strategy and its processes: see newChaos
	case ScenarioIdleXid:
		return &holder{url: url, app: AppLongrunner,
			sql: []string{"BEGIN", "INSERT INTO millrace_bench.holder VALUES (1)"}}, nil
	case ScenarioRRSnapshot:
		return &holder{url: url, app: AppLongrunner,
			sql: []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM millrace_bench.holder"}}, nil
	case ScenarioStandby:
		if standbyURL == "" {
			return nil, errors.New("the standby scenario needs a hot standby: with --database-url (or DATABASE_URL) also pass --standby-url")
		}
		return &holder{url: standbyURL, app: AppLongrunner,
			sql: []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM pg_class"}}, nil
	case ScenarioAnalytics:
		// By default three readers of 120 s each, started a third of a
		// reader apart, so one is always running; shorter stress phases
		// scale them down.
		an = an.resolve(phase)
		return &analytics{url: url, readers: an.Readers, length: an.Duration, interval: an.Interval, readOnly: an.ReadOnly, retryAfter: time.Second}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q", scenario)
}

// holder is one session that runs a few statements and then sits idle in
// its transaction until released.
type holder struct {
	url  string
	app  string
	sql  []string
	conn *pgx.Conn
}

func (h *holder) start(ctx context.Context) error {
	conn, err := connectAs(ctx, h.url, h.app)
	if err != nil {
		return fmt.Errorf("stress session: %w", err)
	}
	for _, q := range h.sql {
		if _, err := conn.Exec(ctx, q); err != nil {
			conn.Close(context.Background())
			return fmt.Errorf("stress session: %s: %w", q, err)
		}
	}
	h.conn = conn
	return nil
}

func (h *holder) release() {
	if h.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = h.conn.Exec(ctx, "ROLLBACK")
	h.conn.Close(ctx)
	h.conn = nil
}

func connectAs(ctx context.Context, url, app string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = app
	return pgx.ConnectConfig(ctx, cfg)
}

// analytics runs reports: REPEATABLE READ transactions that scan a table
// every half second for their whole length. Report k starts k intervals
// after the stress began, on reader session k mod readers, or as soon as
// that session's previous report has finished; with the default interval
// (length/readers) each session runs its reports back to back and the
// readers always overlap. A report whose transaction is cancelled or whose
// session is terminated is retried with a new transaction.
type analytics struct {
	url        string
	readers    int
	length     time.Duration
	interval   time.Duration
	readOnly   bool          // READ ONLY transactions without an xid
	retryAfter time.Duration // the back-off before a refused report is retried

	reports, finished, unfinished atomic.Int64
	started, cancelled, retried   atomic.Int64
	cancel                        context.CancelFunc
	wg                            sync.WaitGroup
}

// stats returns the counters so far.
func (a *analytics) stats() ReaderStats {
	return ReaderStats{Sessions: a.readers, DurationS: a.length.Seconds(), IntervalS: a.interval.Seconds(), ReadOnly: a.readOnly,
		Reports: a.reports.Load(), Finished: a.finished.Load(), Unfinished: a.unfinished.Load(),
		Started: a.started.Load(), Cancelled: a.cancelled.Load(), Retried: a.retried.Load()}
}

func (a *analytics) start(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	begin := time.Now()
	for i := range a.readers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.session(rctx, begin, i)
		}()
	}
	return nil
}

// session runs the reports of reader session i until released.
func (a *analytics) session(ctx context.Context, begin time.Time, i int) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	every := time.Duration(a.readers) * a.interval
	for next := begin.Add(time.Duration(i) * a.interval); ; next = next.Add(every) {
		if !sleepCtx(ctx, time.Until(next)) {
			return
		}
		if now := time.Now(); next.Before(now) {
			next = now // behind schedule: the next report follows at once
		}
		a.reports.Add(1)
		if !a.report(ctx, &conn) {
			a.unfinished.Add(1)
			return
		}
	}
}

// report runs one report on *conn (connecting it when needed) until one
// attempt reads for the whole length; a refused attempt is retried after
// the back-off. It reports false if the scenario was released first.
func (a *analytics) report(ctx context.Context, conn **pgx.Conn) bool {
	refused := false
	for {
		if *conn == nil || (*conn).IsClosed() {
			c, err := connectAs(ctx, a.url, AppAnalytics)
			if err != nil {
				if !sleepCtx(ctx, a.retryAfter) {
					return false
				}
				continue
			}
			*conn = c
		}
		if refused {
			a.retried.Add(1)
		}
		a.started.Add(1)
		err := a.read(ctx, *conn)
		switch {
		case err == nil:
			a.finished.Add(1)
			return true
		case ctx.Err() != nil:
			return false
		}
		a.cancelled.Add(1)
		refused = true
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			(*conn).Close(context.Background())
			*conn = nil
		}
		// A reporting job backs off, then retries.
		if !sleepCtx(ctx, a.retryAfter) {
			return false
		}
	}
}

// read is one reader: a REPEATABLE READ transaction of a.length that
// scans the facts table every half second. Unless read-only, its first
// statement, SELECT pg_current_xact_id(), takes its snapshot and then a
// transaction id, as a report that writes (a summary row, a temp table)
// has one: a reader that starts while this one runs takes this id as its
// snapshot's xmin and keeps it after this one ends.
func (a *analytics) read(ctx context.Context, conn *pgx.Conn) (err error) {
	begin := "BEGIN ISOLATION LEVEL REPEATABLE READ"
	if a.readOnly {
		begin += " READ ONLY"
	}
	if _, err := conn.Exec(ctx, begin); err != nil {
		return err
	}
	defer func() {
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, e := conn.Exec(c, end); e != nil && err == nil {
			err = e
		}
	}()
	until := time.Now().Add(a.length)
	if !a.readOnly {
		if _, err := conn.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
			return err
		}
	}
	for time.Now().Before(until) {
		var n, sum int64
		if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(amount), 0) FROM millrace_bench.facts WHERE account % 7 = 3").Scan(&n, &sum); err != nil {
			return err
		}
		if !sleepCtx(ctx, min(500*time.Millisecond, time.Until(until))) {
			return ctx.Err()
		}
	}
	return nil
}

func (a *analytics) release() {
	if a.cancel != nil {
		a.cancel()
		a.wg.Wait()
	}
}

// sleepCtx sleeps d or until ctx is done; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
