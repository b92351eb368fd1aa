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
)

// Scenarios lists the scenario names with what their stress phase does.
var Scenarios = map[string]string{
	ScenarioClean:      "no stress: the baseline",
	ScenarioIdleXid:    "a session does BEGIN; INSERT; and sits idle, holding an xid",
	ScenarioRRSnapshot: "a REPEATABLE READ transaction takes a snapshot and sits idle",
	ScenarioAnalytics:  "three REPEATABLE READ readers of 120 s each, staggered so they always overlap, scanning",
	ScenarioStandby:    "a hot standby with hot_standby_feedback=on holds a REPEATABLE READ snapshot",
	ScenarioBurndown:   "no producer: --jobs N are inserted first, then worked down",
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
var AppNames = []string{AppLongrunner, AppAnalytics, AppStall}

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

// ReaderStats counts the analytics readers of one stress phase: each
// reader is one 120 s REPEATABLE READ transaction; a cancelled reader
// retries, as a reporting job would.
type ReaderStats struct {
	Started   int64 `json:"started"`
	Finished  int64 `json:"finished"`
	Cancelled int64 `json:"cancelled"`
}

// stress pins the horizon during the stress phase.
type stress interface {
	// start pins the horizon; it returns once the pin is in place.
	start(ctx context.Context) error
	// release ends the pin and closes every session stress opened.
	release()
}

func newStress(scenario, url, standbyURL string, phase time.Duration) (stress, error) {
	switch scenario {
	case ScenarioClean, ScenarioBurndown:
		return nil, nil
	case ScenarioStall:
		return nil, nil // needs the strategy: see newStall
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
		// Three readers of 120 s each, started a third of a reader apart,
		// so one is always running; shorter stress phases scale them down.
		d := min(120*time.Second, phase)
		return &analytics{url: url, readers: 3, length: d, stagger: d / 3}, nil
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

// analytics runs overlapping REPEATABLE READ readers that scan a table
// every half second for their whole length. A reader whose statement is
// cancelled or whose session is terminated retries with a new transaction.
type analytics struct {
	url             string
	readers         int
	length, stagger time.Duration

	stats  ReaderStats
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (a *analytics) start(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	for i := range a.readers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			select {
			case <-time.After(time.Duration(i) * a.stagger):
			case <-rctx.Done():
				return
			}
			a.loop(rctx)
		}()
	}
	return nil
}

// loop runs readers back to back until released.
func (a *analytics) loop(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if conn == nil || conn.IsClosed() {
			c, err := connectAs(ctx, a.url, AppAnalytics)
			if err != nil {
				sleepCtx(ctx, time.Second)
				continue
			}
			conn = c
		}
		atomic.AddInt64(&a.stats.Started, 1)
		switch err := a.read(ctx, conn); {
		case err == nil:
			atomic.AddInt64(&a.stats.Finished, 1)
		case ctx.Err() != nil:
			return
		default:
			atomic.AddInt64(&a.stats.Cancelled, 1)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				conn.Close(context.Background())
				conn = nil
			}
			sleepCtx(ctx, time.Second) // a reporting job backs off, then retries
		}
	}
}

// read is one reader: a REPEATABLE READ transaction of a.length that
// scans the facts table every half second.
func (a *analytics) read(ctx context.Context, conn *pgx.Conn) (err error) {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
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
