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
// and names the holder "transaction open 0 s"; the leader runs as a
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
