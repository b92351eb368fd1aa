package maint

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/pgtest"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestRotationHeldBackIsLogged: a producer transaction left open holds its
// slot; the leader keeps rotating the other slots and says, once per
// LogEvery, which backend holds the slot it cannot reclaim.
func TestRotationHeldBackIsLogged(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &storage.Store{Pool: pool}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := s.Enqueue(ctx, tx, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false); err != nil {
		t.Fatal(err)
	}
	var pid int
	tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	var logs lockedBuffer
	var rounds [][]storage.RingAction
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Hour,
		OnRotate: func(a []storage.RingAction) { rounds = append(rounds, a) }})
	for i := 0; i < 8; i++ {
		m.Step(ctx)
	}
	st, err := storage.Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rotations < 6 {
		t.Fatalf("%d rotations in 8 rounds with one slot held: the ring must turn on the others", st.Rotations)
	}
	out := logs.b.String()
	if n := strings.Count(out, "rotation is held back"); n != 1 {
		t.Fatalf("%d warnings in 8 rounds with LogEvery 1h; want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "slot 0 cannot be reclaimed: in use by pid "+strconv.Itoa(pid)) {
		t.Fatalf("the warning does not name the holder, pid %d:\n%s", pid, out)
	}
}

// loginRole creates a login role (in role, if given) for this test's database and
// returns a URL of base that connects as it.
func loginRole(t *testing.T, owner *pgxpool.Pool, base, name, role string) string {
	t.Helper()
	ctx := context.Background()
	name = name + "_" + owner.Config().ConnConfig.Database
	in := ""
	if role != "" {
		in = " IN ROLE " + role
	}
	if _, err := owner.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN%s", pgx.Identifier{name}.Sanitize(), in)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		owner.Exec(context.Background(), fmt.Sprintf("DROP OWNED BY %[1]s; DROP ROLE %[1]s", pgx.Identifier{name}.Sanitize()))
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(name)
	return u.String()
}

// TestHoldersNamedWithRoleAndAge: a session of another role reads the
// queue's tables and sits idle in its transaction, so no slot can be
// reclaimed. The rotation runs as the schema's owner (not a superuser)
// and says the holder's transaction start is not visible to it (it said
// "transaction open 0 s"); the leader runs as a
// worker role, which cannot see that session's transaction start either:
// it names the holder with its role and how long it has seen it hold the
// slot; given pg_read_all_stats, with its transaction's real age.
func TestHoldersNamedWithRoleAndAge(t *testing.T) {
	ctx := context.Background()
	base := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(ctx, base) // a superuser
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	// The schema's owner is not a superuser, as in a deployment: it cannot
	// see other roles' transactions either.
	db := owner.Config().ConnConfig.Database
	schemaURL := loginRole(t, owner, base, "mowner", "")
	if _, err := owner.Exec(ctx, fmt.Sprintf("ALTER ROLE %s CREATEROLE; GRANT CREATE ON DATABASE %s TO %[1]s",
		pgx.Identifier{"mowner_" + db}.Sanitize(), pgx.Identifier{db}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	schemaPool, err := pgxpool.New(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer schemaPool.Close()
	if _, err := schema.Up(ctx, schemaPool, 0); err != nil {
		t.Fatal(err)
	}
	workerURL := loginRole(t, owner, base, "leader", "millrace_worker")
	readerURL := loginRole(t, owner, base, "reader", "millrace_admin")
	reader, err := pgx.Connect(ctx, readerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close(ctx)
	tx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM millrace.job"); err != nil { // every slot, ACCESS SHARE
		t.Fatal(err)
	}
	readerRole := "role reader_" + owner.Config().ConnConfig.Database
	// lead runs maintenance rounds as the worker role until a warning's
	// holders attribute matches want with an age of at least 2 s.
	lead := func(want *regexp.Regexp) string {
		pool, err := pgxpool.New(ctx, workerURL)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var logs lockedBuffer
		m := New(Config{Store: &storage.Store{Pool: pool}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond})
		var found, out string
		testkit.WaitFor(t, "a warning naming the holder "+readerRole+" held for 2 s or more", 30*time.Second, func() bool {
			m.Step(ctx)
			logs.mu.Lock()
			out = logs.b.String()
			logs.mu.Unlock()
			for _, line := range strings.Split(out, "\n") {
				if sm := want.FindStringSubmatch(line); sm != nil && strings.Contains(line, readerRole) {
					if n, _ := strconv.Atoi(sm[1]); n >= 2 {
						found = line
						return true
					}
				}
			}
			return false
		}, func() string { return "the log:\n" + out })
		// The rotation's own detail names the holder too: it cannot see
		// the transaction's start, and said "transaction open 0 s".
		if strings.Contains(found, "transaction open 0 s") {
			t.Errorf("a holder idle in its transaction for 2 s or more named with \"transaction open 0 s\": %s", found)
		}
		return found
	}
	t.Log(lead(regexp.MustCompile(`holders=".*seen holding slot \d+ for (\d+) s`)))
	if _, err := owner.Exec(ctx, "GRANT pg_read_all_stats TO "+pgx.Identifier{"leader_" + owner.Config().ConnConfig.Database}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Log(lead(regexp.MustCompile(`holders=".*idle in transaction, transaction open (\d+) s`)))
}

// TestStoppedListenerIsEnded: the session connection of a millrace
// process (named storage.SessionName of its process, it LISTENs) stops
// reading: its process is stopped.
// Notifications fill its socket and its backend blocks writing them, and
// PostgreSQL's notification queue cannot be emptied past it. The leader
// (the same role) names it and ends it once it has been blocked for
// ListenerStuckAfter; the queue empties.
func TestStoppedListenerIsEnded(t *testing.T) {
	ctx := context.Background()
	base := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := schema.Up(ctx, owner, 0); err != nil {
		t.Fatal(err)
	}
	workerURL := loginRole(t, owner, base, "w", "millrace_worker")
	// The stopped process's session: it names itself as the session of
	// process 987654 and listens, then nothing on this side reads from it.
	stopped, err := pgx.Connect(ctx, workerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close(ctx)
	if _, err := stopped.Exec(ctx, "SELECT set_config('application_name', $1, false)", storage.SessionName(987654)); err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Exec(ctx, "LISTEN millrace"); err != nil {
		t.Fatal(err)
	}
	pid := int32(stopped.PgConn().PID())
	// Notify until its backend is blocked writing and the queue is in use.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var wait *string
		var usage float64
		if err := owner.QueryRow(ctx, "SELECT (SELECT wait_event FROM pg_stat_activity WHERE pid = $1), pg_notification_queue_usage()", pid).Scan(&wait, &usage); err != nil {
			t.Fatal(err)
		}
		if wait != nil && *wait == "ClientWrite" && usage > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener's backend is not blocked writing (wait event %v, queue usage %v)", wait, usage)
		}
		if _, err := owner.Exec(ctx, "SELECT pg_notify('millrace', g || repeat('x', 7000)) FROM generate_series(1, 100) g"); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(ctx, workerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var logs lockedBuffer
	ended := make(chan int32, 1)
	m := New(Config{Store: &storage.Store{Pool: pool}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		ListenerStuckAfter: time.Second, OnEndListener: func(p int32) { ended <- p }})
	deadline = time.Now().Add(30 * time.Second)
	for done := false; !done; {
		m.Step(ctx)
		select {
		case p := <-ended:
			if p != pid {
				t.Fatalf("ended backend %d, want %d", p, pid)
			}
			done = true
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped listener was not ended:\n%s", logs.b.String())
		}
	}
	logs.mu.Lock()
	out := logs.b.String()
	logs.mu.Unlock()
	if !strings.Contains(out, fmt.Sprintf("pid=%d", pid)) || !strings.Contains(out, "process=987654") {
		t.Fatalf("the log does not name the backend and its process:\n%s", out)
	}
	var usage float64
	testkit.WaitFor(t, "the notification queue to empty", 30*time.Second, func() bool {
		owner.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage)
		return usage == 0
	}, func() string { return fmt.Sprintf("usage %v", usage) })
}

// monthly is a schedule whose slots are the first instant of each month,
// UTC.
type monthly struct{}

func (monthly) Next(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// TestRunOnStartRemembersOldSlots: a monthly job with RunOnStart runs this
// month's slot once; when history's expiry has forgotten every slot older
// than a week, a leader that starts later still knows the job ran this
// month and does not run it again.
func TestRunOnStartRemembersOldSlots(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	per := []Periodic{{Name: "monthly", Schedule: monthly{}, RunOnStart: true, Job: func() (storage.NewJob, error) {
		return storage.NewJob{Queue: "q", Kind: "monthly", Args: []byte(`{}`), MaxAttempts: 1}, nil
	}}}
	jobs := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic WHERE name = 'monthly'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), Periodic: per})
	if err := first.runPeriodic(ctx); err != nil {
		t.Fatal(err)
	}
	if n := jobs(); n != 1 {
		t.Fatalf("RunOnStart enqueued %d slots, want this month's", n)
	}
	// The slot was enqueued more than a week ago, as for a monthly job
	// late in its month; expiry forgets old slots.
	if _, err := pool.Exec(ctx, "UPDATE millrace.periodic SET at = now() - interval '20 days'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireHistory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	again := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), Periodic: per})
	if err := again.runPeriodic(ctx); err != nil {
		t.Fatal(err)
	}
	var enqueued int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE kind = 'monthly'").Scan(&enqueued); err != nil {
		t.Fatal(err)
	}
	if enqueued != 1 {
		t.Fatalf("the monthly job was enqueued %d times for one month; a restart after expiry ran its slot again", enqueued)
	}
}

// TestRingReaderLimit: a session reads the queue's tables in a
// transaction it leaves open (BEGIN; SELECT count(*) FROM millrace.jobs),
// which holds every slot of the ring. With RingReaderLimit off, the leader
// names it (pid, the slots it holds) and leaves it alone: it still runs
// after several rounds past what the limit would have been. With the
// limit set, the leader says when it will end it, ends it once its
// transaction is older than the limit (it was idle in its transaction:
// terminated), logs that at level Error, and the ring is reclaimed.
func TestRingReaderLimit(t *testing.T) {
	const limit = time.Second
	ctx := context.Background()
	url, pool, s := turnedRing(t, true) // every slot has been current and holds a job
	// reader opens a session holding the ring and returns it with its pid.
	reader := func() (*pgx.Conn, int32) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		var pid int32
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "BEGIN; SELECT count(*) FROM millrace.jobs"); err != nil {
			t.Fatal(err)
		}
		return conn, pid
	}
	// xactAge is how long pid's transaction has been open (0: none).
	xactAge := func(pid int32) time.Duration {
		var secs *float64
		if err := pool.QueryRow(ctx, "SELECT extract(epoch FROM clock_timestamp() - xact_start)::float8 FROM pg_stat_activity WHERE pid = $1", pid).Scan(&secs); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if secs == nil {
			return 0
		}
		return time.Duration(*secs * float64(time.Second))
	}

	t.Run("off", func(t *testing.T) {
		conn, pid := reader()
		var logs lockedBuffer
		m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond})
		var out string
		testkit.WaitFor(t, "the reader's transaction to be 3 limits old while the leader names it", 30*time.Second, func() bool {
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
			logs.mu.Lock()
			out = logs.b.String()
			logs.mu.Unlock()
			return xactAge(pid) > 3*limit && strings.Contains(out, fmt.Sprintf("pid %d (", pid))
		}, func() string { return "the log:\n" + out })
		if !strings.Contains(out, "a reader of the queue's tables") || !strings.Contains(out, "RingReaderLimit bounds it; it is off") {
			t.Fatalf("the warning does not say pid %d reads the ring and that nothing bounds it:\n%s", pid, out)
		}
		if strings.Contains(out, "level=ERROR") {
			t.Fatalf("the leader ended something with RingReaderLimit off:\n%s", out)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM millrace.jobs").Scan(&n); err != nil {
			t.Fatalf("the reader was ended with RingReaderLimit off: %v", err)
		}
		conn.Exec(ctx, "ROLLBACK")
	})

	t.Run("on", func(t *testing.T) {
		conn, pid := reader()
		var logs lockedBuffer
		var ended []string
		var reclaimedAfter bool
		m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond,
			RingReaderLimit: limit,
			OnEndReader: func(p int32, how string) {
				if p == pid {
					ended = append(ended, how)
				}
			},
			OnRotate: func(as []storage.RingAction) {
				for _, a := range as {
					if a.Action == "reclaimed" && len(ended) > 0 {
						reclaimedAfter = true
					}
				}
			}})
		start := time.Now()
		var out string
		testkit.WaitFor(t, "the reader to be ended and the ring reclaimed", limit+15*time.Second, func() bool {
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
			logs.mu.Lock()
			out = logs.b.String()
			logs.mu.Unlock()
			return reclaimedAfter
		}, func() string { return fmt.Sprintf("ended %v; the log:\n%s", ended, out) })
		t.Logf("reader ended (%v) and ring reclaimed %s after it began holding (limit %s)", ended, time.Since(start).Round(time.Millisecond), limit)
		if len(ended) != 1 || ended[0] != "terminated" {
			t.Fatalf("the reader idle in its transaction was %v; want terminated once", ended)
		}
		if !strings.Contains(out, fmt.Sprintf("pid %d (", pid)) || !strings.Contains(out, "it is ended once its transaction is 1s old") {
			t.Fatalf("the warning before the end does not name pid %d and when it is ended:\n%s", pid, out)
		}
		if !regexp.MustCompile(fmt.Sprintf(`level=ERROR msg="millrace: terminated a reader of the queue's tables[^"]*" pid=%d role=\S+ application=\S* state="idle in transaction" transaction_age=\S+`, pid)).MatchString(out) {
			t.Fatalf("no Error line naming pid %d, its role, application, state and age:\n%s", pid, out)
		}
		testkit.WaitFor(t, "the reader's backend to be gone", 10*time.Second, func() bool { return xactAge(pid) == 0 })
		if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
			t.Fatal("the reader's session still runs statements after it was terminated")
		}
	})
}

// TestRingReaderLimitCancelsARunningRead: a reader of the ring that is
// running a statement when its transaction passes RingReaderLimit is
// cancelled, not terminated: the statement fails, its transaction aborts
// and lets go of the ring, and the session lives on.
func TestRingReaderLimitCancelsARunningRead(t *testing.T) {
	const limit = time.Second
	ctx := context.Background()
	url, _, s := turnedRing(t, false)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN; SELECT count(*) FROM millrace.jobs"); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(60)") // a long read, in the transaction that holds the ring
		read <- err
	}()
	var ended []string
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond,
		RingReaderLimit: limit, OnEndReader: func(p int32, how string) {
			if p == pid {
				ended = append(ended, how)
			}
		}})
	testkit.WaitFor(t, "the reader to be ended", limit+15*time.Second, func() bool {
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
		return len(ended) > 0
	}, func() string { logs.mu.Lock(); defer logs.mu.Unlock(); return logs.b.String() })
	if ended[0] != "cancelled" {
		t.Fatalf("the running reader was %v; want cancelled", ended)
	}
	if err := <-read; err == nil || !strings.Contains(err.Error(), "canceling statement") {
		t.Fatalf("the cancelled read returned %v", err)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the cancelled reader's session is gone: %v", err)
	}
	var reclaimed bool
	testkit.WaitFor(t, "a reclaim after the cancel", 10*time.Second, func() bool {
		as, err := s.Rotate(ctx, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			reclaimed = reclaimed || a.Action == "reclaimed"
		}
		return reclaimed
	})
}

// turnedRing is a fresh database whose ring has turned once: every slot
// has been current (and, with jobs, got a job while it was). The pool is
// closed when the test ends.
func turnedRing(t *testing.T, jobs bool) (url string, pool *pgxpool.Pool, s *storage.Store) {
	t.Helper()
	ctx := context.Background()
	url = testkit.DBURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s = &storage.Store{Pool: pool}
	for i := 0; i < 4; i++ {
		if jobs {
			if _, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Rotate(ctx, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	return url, pool, s
}

// TestShortLeaderLeaseHeld: a leader term of 1 s (the shortest a client
// allows) with rounds every second (the default) is held, round after
// round, and through a first round that takes 1.5 s (a trigger sleeps in
// its promotion): another live process never gets it, and Run does not
// give it up. Renewed only by the rounds, it ran out at every round; renewed
// between rounds but not during one, it ran out in a slow round.
func TestShortLeaderLeaseHeld(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	if _, err := pool.Exec(ctx, `CREATE FUNCTION public.slow_round() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
		CREATE TRIGGER slow_round BEFORE INSERT ON millrace.promote FOR EACH ROW EXECUTE FUNCTION public.slow_round()`); err != nil {
		t.Fatal(err)
	}
	p1, err := s.Register(ctx, "leader", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.Register(ctx, "other", "h", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	term, err := s.Lead(ctx, p1, 0, time.Second)
	if err != nil || term == 0 {
		t.Fatalf("the first process did not get a term: %d, %v", term, err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- Run(rctx, Config{Store: s, Logger: slog.New(slog.DiscardHandler), Owner: p1, Term: term,
			LeaderLease: time.Second, Every: time.Second})
	}()
	// Four leases long, every 250 ms: the other process asks for the term.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 16; i++ {
		select {
		case err := <-ran:
			t.Fatalf("Run returned after %d checks: %v", i, err)
		case <-tick.C:
		}
		if got, err := s.Lead(ctx, p2, 0, time.Second); err != nil {
			t.Fatal(err)
		} else if got != 0 {
			t.Fatalf("after %.2fs another process took a new term (%d): the leader's 1 s term ran out", float64(i+1)/4, got)
		}
	}
	stop()
	if err := <-ran; err != context.Canceled {
		t.Errorf("Run ended with %v, want context.Canceled", err)
	}
}

// TestRingTurnsUnderALoopOfShortReaders (issue 31.8): a session reads the
// queue's tables in back-to-back statements of 0.3 s. No single
// transaction is old, yet one always holds every slot when a NOWAIT
// comes: the ring turned 2 times in 20 s against 12 without it (here, at
// a round every 100 ms, 2-4 reclaims in 60 rounds). Once a
// slot has been blocked a rotation period past its time, the leader's
// round waits for its locks and cancels the reader's statement: the ring
// turns, and the reader loses at most one statement per reclaim.
func TestRingTurnsUnderALoopOfShortReaders(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: 200 * time.Millisecond,
		LogEvery: time.Nanosecond})
	rctx, stop := context.WithCancel(ctx)
	var reads, cancelled atomicCounter
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		conn, err := pgx.Connect(rctx, pool.Config().ConnConfig.ConnString())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for rctx.Err() == nil {
			_, err := conn.Exec(rctx, "SELECT (SELECT count(*) FROM millrace.job), pg_sleep(0.3)")
			switch {
			case err == nil:
				reads.add()
			case strings.Contains(err.Error(), "57014"):
				cancelled.add()
			}
		}
	}()
	defer stop()
	testkit.WaitFor(t, "the reader to hold the ring", 10*time.Second, func() bool { return reads.get() > 0 })
	ledger := func() int64 {
		var n int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.reclaim").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := ledger()
	for i := 0; i < 3; i++ {
		if _, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	// Sixty rounds at a leader's cadence (every 100 ms here, every second
	// by default): a slot is due 200 ms after it leaves use.
	rounds := func(m *Maintainer) {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 60; i++ {
			<-tick.C
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	rounds(m)
	n := ledger() - start
	t.Logf("%d reclaims; the reader: %d reads, %d cancelled", n, reads.get(), cancelled.get())
	// The same rounds without the reader: the reader's must be at least
	// half as many (issue 31's acceptance).
	stop()
	<-readerDone
	start = ledger()
	rounds(New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: 200 * time.Millisecond}))
	clean := ledger() - start
	t.Logf("without the reader: %d reclaims", clean)
	if n*2 < clean {
		t.Errorf("%d reclaims in 60 rounds with the reader looping, %d without; want at least half", n, clean)
	}
	if c := int64(cancelled.get()); c > n+1 {
		t.Errorf("%d of the reader's statements cancelled for %d reclaims; want at most one a reclaim", c, n)
	}
	if !strings.Contains(logs.String(), "cancelled the statement of a reader") {
		t.Errorf("the leader did not say it cancelled the reader:\n%s", logs.String())
	}
}

// atomicCounter counts from several goroutines.
type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *atomicCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
