package maint

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

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
	base := testkit.EmptyDBURL(t)
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

// TestHoldersAreNotReadFromTheDetail: a producer whose application_name
// reads "pid N" (N another backend, which holds nothing) holds a slot. The
// rotation's detail names the holder by its application, so it says
// "pid N" too, yet the leader names only the holder: it takes the
// holders' process ids from the rotation's own column, never from text.
func TestHoldersAreNotReadFromTheDetail(t *testing.T) {
	ctx := context.Background()
	url := testkit.DBURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &storage.Store{Pool: pool}
	bystander, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Close(ctx)
	other := int32(bystander.PgConn().PID())
	producer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close(ctx)
	holderPID := int32(producer.PgConn().PID())
	if _, err := producer.Exec(ctx, "SELECT set_config('application_name', $1, false)", fmt.Sprintf("pid %d", other)); err != nil {
		t.Fatal(err)
	}
	tx, err := producer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := s.Enqueue(ctx, tx, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	var blocked *storage.RingAction
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Hour,
		OnRotate: func(as []storage.RingAction) {
			for _, a := range as {
				if a.Action == storage.RingBlocked {
					blocked = &a
				}
			}
		}})
	testkit.WaitFor(t, "a round that cannot reclaim the producer's slot", 10*time.Second, func() bool {
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
		return blocked != nil
	})
	if !slices.Equal(blocked.Holders, []int32{holderPID}) {
		t.Fatalf("the blocked slot's holders are %v, want the producer %d", blocked.Holders, holderPID)
	}
	if !strings.Contains(blocked.Detail, fmt.Sprintf("pid %d", other)) {
		t.Fatalf("the detail does not carry the producer's application name %q: %s", fmt.Sprintf("pid %d", other), blocked.Detail)
	}
	out := logs.String()
	if !strings.Contains(out, fmt.Sprintf("pid %d (", holderPID)) {
		t.Fatalf("the leader does not name the producer, pid %d:\n%s", holderPID, out)
	}
	if strings.Contains(out, fmt.Sprintf("pid %d (", other)) {
		t.Fatalf("the leader named backend %d, which holds nothing, read from the detail:\n%s", other, out)
	}
}
