package millrace_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
)

// The tests in this file run the queue under the settings real databases
// have (DESIGN.md P14): a default isolation above READ COMMITTED, server
// timeouts on the role, a connection pooler. Each sets what it tests with
// ALTER DATABASE or ALTER ROLE, so that every connection the client opens
// afterwards gets it, as it would in a deployment.

// alterDatabase runs ALTER DATABASE <pool's database> SET name = value.
// Connections opened afterwards get the setting.
func alterDatabase(t *testing.T, pool *pgxpool.Pool, name, value string) {
	t.Helper()
	db := pool.Config().ConnConfig.Database
	if _, err := pool.Exec(context.Background(), fmt.Sprintf("ALTER DATABASE %s SET %s = %s",
		pgx.Identifier{db}.Sanitize(), name, quoteLiteral(value))); err != nil {
		t.Fatal(err)
	}
}

func quoteLiteral(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += "''"
		} else {
			out += string(r)
		}
	}
	return out + "'"
}

// poolOn opens a pool on url, closed at the end of the test.
func poolOn(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := newPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// workOnce inserts n jobs (singly and in bulk) through producer and works
// them with the clients made by start, then checks that every job ran
// exactly once and finished completed, with no error text stored.
func workOnce(t *testing.T, owner *pgxpool.Pool, producer *millrace.Client, n int, s *seen) {
	t.Helper()
	ctx := context.Background()
	single := n / 5
	var wg sync.WaitGroup
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := p; i < single; i += 2 {
				if _, err := producer.Insert(ctx, countArgs{N: i}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	for start := single; start < n; start += 400 {
		var params []millrace.InsertManyParams
		for i := start; i < min(start+400, n); i++ {
			params = append(params, millrace.InsertManyParams{Args: countArgs{N: i}})
		}
		if _, err := producer.InsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	waitFor(t, "every job to run", 90*time.Second, func() bool { return s.n.Load() >= int64(n) },
		func() string { return fmt.Sprintf("%d runs of %d jobs", s.n.Load(), n) })
	// Every job's outcome is written: history holds one completed attempt
	// per job and nothing else.
	var done, bad int
	waitFor(t, "every outcome to be written", 30*time.Second, func() bool {
		owner.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state = 'completed' AND error IS NULL), count(*) FILTER (WHERE state <> 'completed' OR error IS NOT NULL) FROM millrace.history").Scan(&done, &bad)
		return done+bad >= n
	}, func() string { return fmt.Sprintf("%d completed, %d other outcomes", done, bad) })
	time.Sleep(300 * time.Millisecond) // a late duplicate would show up by now
	s.mu.Lock()
	defer s.mu.Unlock()
	dups, lost := 0, 0
	for i := 0; i < n; i++ {
		switch r := s.runs[i]; {
		case r == 0:
			lost++
		case r > 1:
			dups++
		}
	}
	if dups > 0 || lost > 0 || bad > 0 {
		rows, _ := owner.Query(ctx, "SELECT state, error, count(*) FROM millrace.history WHERE state <> 'completed' OR error IS NOT NULL GROUP BY 1, 2")
		for rows.Next() {
			v, _ := rows.Values()
			t.Log("history:", v)
		}
		rows.Close()
		t.Fatalf("%d of %d jobs ran more than once, %d never ran, %d outcomes other than completed", dups, n, lost, bad)
	}
}

// TestDefaultIsolation: the database's default isolation is REPEATABLE
// READ or SERIALIZABLE. Every protocol transaction runs at READ COMMITTED
// whatever the default (a claim under REPEATABLE READ took its snapshot
// before its lock and handed a second claimer the first one's jobs), and a
// serialization failure is retried, never stored as the job's outcome.
func TestDefaultIsolation(t *testing.T) {
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			ctx := context.Background()
			owner := newDB(t)
			alterDatabase(t, owner, "default_transaction_isolation", iso)
			url := owner.Config().ConnString()
			s := &seen{runs: map[int]int{}}
			var producer *millrace.Client
			for i := 0; i < 2; i++ {
				pool := poolOn(t, url)
				var got string
				if err := pool.QueryRow(ctx, "SHOW default_transaction_isolation").Scan(&got); err != nil || got != iso {
					t.Fatalf("default_transaction_isolation = %q, %v; want %q", got, err, iso)
				}
				c := startClient(t, pool, countingWorkers(s, 0), millrace.Config{
					Queues:      map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}},
					RotateAfter: 300 * time.Millisecond, MaintenanceEvery: 100 * time.Millisecond})
				producer = c
			}
			workOnce(t, owner, producer, 2000, s)
		})
	}
}

// TestFlushCancelledIsRetried: an ack flush the server cancels (here a
// cancel request while it waits for its lock; a serialization failure, a
// deadlock or a timeout are the same: the server rolled it back for a
// reason of its own) is sent again, not taken for an ack the server
// rejected: the job's outcome is stored as it was, not with a placeholder
// error text.
func TestFlushCancelledIsRetried(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	release := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		<-release
		return nil
	}))
	c := startClient(t, pool, workers, millrace.Config{})
	r := mustInsert(t, c, countArgs{N: 1}, nil)
	var owner int32
	waitFor(t, "the job to be claimed", 10*time.Second, func() bool {
		return pool.QueryRow(ctx, "SELECT owner FROM millrace.jobs WHERE id = $1 AND state = 'running'", r.ID).Scan(&owner) == nil
	})
	// Hold the owner's flush lock: its flush waits for it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(1836412277, $1)", owner); err != nil {
		t.Fatal(err)
	}
	close(release)
	// waiter is the backend waiting for the lock, and when its statement began.
	waiter := func() (pid int, since time.Time) {
		pool.QueryRow(ctx, `SELECT l.pid, a.query_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.classid = 1836412277 AND l.objid = $1 AND NOT l.granted`, owner).Scan(&pid, &since)
		return pid, since
	}
	var first int
	var firstAt time.Time
	waitFor(t, "the flush to wait for its lock", 10*time.Second, func() bool { first, firstAt = waiter(); return first != 0 })
	if _, err := pool.Exec(ctx, "SELECT pg_cancel_backend($1)", first); err != nil {
		t.Fatal(err)
	}
	// The flush comes back and waits again (the same lock).
	waitFor(t, "the flush to be sent again", 10*time.Second, func() bool {
		pid, at := waiter()
		return pid != 0 && at.After(firstAt)
	})
	tx.Rollback(ctx)
	var state string
	var errText *string
	waitFor(t, "the job's outcome", 10*time.Second, func() bool {
		return pool.QueryRow(ctx, "SELECT state, error FROM millrace.history WHERE id = $1", r.ID).Scan(&state, &errText) == nil
	})
	if state != "completed" || errText != nil {
		t.Fatalf("job stored as %s with error %q; want completed, no error", state, deref(errText))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
