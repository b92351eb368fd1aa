package maint

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// leaderOf registers a process on pool and makes it the leader: its store,
// its identity and its term (10 s).
func leaderOf(t *testing.T, pool *pgxpool.Pool) (s *storage.Store, owner int32, term int64) {
	t.Helper()
	ctx := context.Background()
	s = &storage.Store{Pool: pool}
	owner, err := s.Register(ctx, "leader", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if term, err = s.Lead(ctx, owner, 0, 10*time.Second); err != nil || term == 0 {
		t.Fatalf("no term: %d, %v", term, err)
	}
	return s, owner, term
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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

// TestNewFillsTheDefaults: a Maintainer made from an empty Config runs at
// the documented defaults, and a line of one kind is let through once per
// LogEvery.
func TestNewFillsTheDefaults(t *testing.T) {
	m := New(Config{})
	c := m.cfg
	if c.Every != time.Second || c.RotateAfter != 10*time.Second || c.StuckAfter != time.Hour ||
		c.MaxCarryBytes != storage.DefaultMaxCarryBytes || c.CompactMin != 10000 || c.LogEvery != 30*time.Second ||
		c.Logger == nil || c.TallyEvery != 10*time.Second || c.ListenerStuckAfter != time.Minute ||
		c.LeaderLease != storage.DefaultLeaderLease || c.RingReaderLimit != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	if !m.logEvery("a") || m.logEvery("a") || !m.logEvery("b") {
		t.Fatal("logEvery does not let one line of a kind through per LogEvery")
	}
}
