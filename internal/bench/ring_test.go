package bench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestAcceptanceRingTurns (issue 31, acceptance 4): with each of three
// things left running beside the clean scenario at 800 jobs/s — an open
// CompleteTx of a process that died, a queue nobody works taking 10% of
// the traffic, a loop of short read transactions — the ring keeps turning
// (reclaims per minute at least half of the clean run's) and its storage
// stays within twice the clean run's.
//
// Each run is `millrace bench --strategies millrace --scenario clean
// --rate 800 --warmup 5s --clean D --stress 0s --recovery 0s` on a
// database of its own, with the client's defaults (RotateAfter 10 s,
// MaxCarryBytes 16 MiB, no RingReaderLimit). Beside it, from after the
// schema exists until the workers stop:
//
//   - dead CompleteTx: a process registers with a 1 s lease and never
//     renews it, claims two jobs of a queue of its own, completes one in a
//     transaction (storage.Complete, what CompleteTx runs) and leaves that
//     transaction open to the end;
//   - unserved queue: 80 jobs a second of 1 kB args (10% of the jobs beside
//     800/s, about 80 kB/s, so that the backlog passes MaxCarryBytes after
//     about 3.5 minutes) to a queue no worker serves;
//   - short readers: one session in a loop of BEGIN; SELECT count(*) FROM
//     millrace.jobs; SELECT pg_sleep(0.3); COMMIT, back to back.
//
// Once a second the sampler reads millrace.ring_stats() and the size of
// the ring's partitions (millrace.slot_tables of slots 0 to 3, with their
// indexes and TOAST) and of the park (job_4). Reclaims per minute are
// counted over the whole sampled span.
//
// D is 5 minutes, or MILLRACE_ACCEPT_FOR (a Go duration) for a shorter
// try:
//
//	MILLRACE_BENCH_ACCEPTANCE=1 MILLRACE_ACCEPT_FOR=60s go test -count=1 -timeout 60m -run TestAcceptanceRingTurns -v ./internal/bench/
func TestAcceptanceRingTurns(t *testing.T) {
	acceptance(t)
	dur := acceptFor(t, 5*time.Minute)
	runs := []struct {
		name  string
		fault func(ctx context.Context, pool *pgxpool.Pool, note func(string)) error
	}{
		{"clean", nil},
		{"dead CompleteTx", deadCompleteTx},
		{"unserved queue", unservedQueue},
		{"short readers", shortReaders},
	}
	var clean ringSamples
	for i, r := range runs {
		url := testkit.EmptyDBURL(t)
		s := &ringSampler{url: url, fault: r.fault}
		cfg := bench.Config{URL: url, Strategies: []string{"millrace"}, Scenario: bench.ScenarioClean,
			Rate: 800, Warmup: 5 * time.Second, Clean: dur, Out: t.TempDir(), Guard: s.run}
		res, err := bench.Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if s.err != nil {
			t.Fatalf("%s: sampler: %v", r.name, s.err)
		}
		ss := res.Summary.Strategies["millrace"]
		ph := ss.Phases[bench.PhaseClean]
		got := s.samples
		t.Logf("%-16s offered %.0f/s, completed %.0f/s, lost %d, run twice %d; %s; %s",
			r.name+":", ph.OfferedPerS, ph.CompletedPerS, ss.LostJobs, ss.DuplicateJobs, got, strings.Join(s.notes, "; "))
		if ss.LostJobs != 0 || ss.DuplicateJobs != 0 {
			t.Errorf("%s: lost %d, run twice %d", r.name, ss.LostJobs, ss.DuplicateJobs)
		}
		if i == 0 {
			clean = got
			if clean.reclaims < 2 {
				t.Fatalf("clean: %d reclaims, nothing to compare with", clean.reclaims)
			}
			continue
		}
		if got.perMinute() < clean.perMinute()/2 {
			t.Errorf("%s: %.1f reclaims a minute, less than half of clean's %.1f", r.name, got.perMinute(), clean.perMinute())
		}
		if got.ringMax > 2*clean.ringMax {
			t.Errorf("%s: ring storage reached %s, more than twice clean's %s", r.name, mb(got.ringMax), mb(clean.ringMax))
		}
	}
}

// ringSamples is what the sampler saw of the ring over a run.
type ringSamples struct {
	span              time.Duration
	reclaims, n       int64
	ringSum, ringMax  int64
	parkMax, parkLast int64
}

func (r ringSamples) perMinute() float64 {
	return float64(r.reclaims) / r.span.Minutes()
}

func (r ringSamples) String() string {
	return fmt.Sprintf("%d reclaims in %s (%.1f a minute); ring storage mean %s, max %s; park max %s, at the end %s",
		r.reclaims, r.span.Round(time.Second), r.perMinute(), mb(r.ringSum/max(r.n, 1)), mb(r.ringMax), mb(r.parkMax), mb(r.parkLast))
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// ringSampler samples the ring once a second while its fault runs.
type ringSampler struct {
	url     string
	fault   func(ctx context.Context, pool *pgxpool.Pool, note func(string)) error
	samples ringSamples
	notes   []string
	err     error
}

const ringSizes = `SELECT
	(SELECT sum(pg_total_relation_size(t::regclass)) FROM generate_series(0, 3) s, unnest(millrace.slot_tables(s)) t)::bigint,
	pg_total_relation_size('millrace.job_4')`

func (s *ringSampler) run(ctx context.Context) error {
	qctx := context.WithoutCancel(ctx)
	pool, err := pgxpool.New(qctx, s.url)
	if err != nil {
		s.err = err
		return err
	}
	defer pool.Close()
	var mu sync.Mutex
	note := func(n string) { mu.Lock(); s.notes = append(s.notes, n); mu.Unlock() }
	var fwg sync.WaitGroup
	fctx, stopFault := context.WithCancel(qctx)
	var ferr error
	if s.fault != nil {
		fwg.Go(func() { ferr = s.fault(fctx, pool, note) })
	}
	sample := func() (reclaims, ring, park int64, err error) {
		st, err := storage.Ring(qctx, pool)
		if err != nil {
			return 0, 0, 0, err
		}
		err = pool.QueryRow(qctx, ringSizes).Scan(&ring, &park)
		return st.Reclaims, ring, park, err
	}
	rec0, _, _, err := sample()
	began := time.Now()
	tick := time.NewTicker(time.Second)
	for err == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			var rec, ring, park int64
			if rec, ring, park, err = sample(); err == nil {
				r := &s.samples
				r.n++
				r.ringSum += ring
				r.ringMax = max(r.ringMax, ring)
				r.parkMax = max(r.parkMax, park)
				r.parkLast = park
				r.reclaims = rec - rec0
				r.span = time.Since(began)
			}
			continue
		}
		break
	}
	tick.Stop()
	stopFault()
	fwg.Wait()
	s.err = errors.Join(err, ferr)
	return s.err
}

// deadCompleteTx leaves a CompleteTx open, from a process that stops
// renewing its lease, until ctx ends.
func deadCompleteTx(ctx context.Context, pool *pgxpool.Pool, note func(string)) error {
	s := &storage.Store{Pool: pool}
	for range 2 {
		if _, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: "dead", Kind: "dead", Args: []byte(`{}`), MaxAttempts: 25}, false); err != nil {
			return err
		}
	}
	owner, err := s.Register(ctx, "dead", "h", 1, time.Second)
	if err != nil {
		return err
	}
	bs, err := s.Claim(ctx, "dead", owner, 1, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20, Start: 10})
	if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 2 {
		return fmt.Errorf("dead CompleteTx: claim %v %v", bs, err)
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if err := storage.Complete(ctx, tx, owner, bs[0], &bs[0].Jobs[0], time.Now()); err != nil {
		return err
	}
	note(fmt.Sprintf("process %d died with a CompleteTx of job %d open", owner, bs[0].Jobs[0].ID))
	<-ctx.Done()
	return nil
}

// unservedQueue inserts 80 jobs of 1 kB a second to a queue nobody
// serves, 8 every 100 ms, until ctx ends.
func unservedQueue(ctx context.Context, pool *pgxpool.Pool, note func(string)) error {
	args := []byte(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1000)))
	batch := make([]storage.NewJob, 8)
	for i := range batch {
		batch[i] = storage.NewJob{Queue: "unserved", Kind: "unserved", Args: args, MaxAttempts: 25}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			note(fmt.Sprintf("%d jobs to the unserved queue", n))
			return nil
		case <-tick.C:
		}
		if _, err := storage.Insert(ctx, pool, batch, false); err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		n += len(batch)
	}
}

// shortReaders runs 0.3 s read transactions of millrace.jobs back to back
// on one connection until ctx ends; one cancelled by the leader is rolled
// back and the loop goes on.
func shortReaders(ctx context.Context, pool *pgxpool.Pool, note func(string)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var done, cancelled atomic.Int64
	defer func() { note(fmt.Sprintf("%d reads done, %d cancelled by the leader", done.Load(), cancelled.Load())) }()
	for ctx.Err() == nil {
		err := pgx.BeginFunc(context.WithoutCancel(ctx), conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT count(*) FROM millrace.jobs"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT pg_sleep(0.3)")
			return err
		})
		var pe *pgconn.PgError
		switch {
		case err == nil:
			done.Add(1)
		case errors.As(err, &pe) && pe.Code == "57014" && ctx.Err() == nil:
			cancelled.Add(1)
		case ctx.Err() != nil:
		default:
			return err
		}
	}
	return nil
}
