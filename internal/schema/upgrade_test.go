package schema_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

var updateDumps = flag.Bool("update-dumps", false, "rewrite testdata/upgrade/vN.sql: a database at each released version, populated, dumped with pg_dump")

// released are the schema versions released before this one: each has a
// frozen dump in testdata/upgrade, made once with that version's migrations
// (which never change) and populated with every kind of row it can hold.
var released = []int{1, 2, 3, 4, 5, 6}

// expectation is one line "-- expect <id> <state>" of a dump: the job's
// state, as job_state reports it, once the dump is upgraded.
type expectation struct {
	id    int64
	state string
}

// TestUpgradeFromEachVersion restores each frozen dump, migrates it to this
// binary's version, and checks that it has exactly the schema of a fresh
// install (functions, grants and comments included) and that every job of
// the dump is where it was: live, scheduled, unique, cancelled, failed and
// finished ones, with their ids, and that new ids do not reuse old ones.
func TestUpgradeFromEachVersion(t *testing.T) {
	if *updateDumps {
		for _, v := range released {
			writeDump(t, v)
		}
	}
	ctx := context.Background()
	want := snapshot(ctx, t, migrated(t))
	for _, v := range released {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			file := filepath.Join("testdata", "upgrade", fmt.Sprintf("v%d.sql", v))
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update-dumps to create it)", err)
			}
			pool := restored(t, string(body))
			var maxID int64
			if err := pool.QueryRow(ctx, "SELECT last_value FROM millrace.job_id_seq").Scan(&maxID); err != nil {
				t.Fatal(err)
			}
			if _, err := schema.Up(ctx, pool, 0); err != nil {
				t.Fatalf("upgrade from version %d: %v", v, err)
			}
			if got := snapshot(ctx, t, pool); got != want {
				t.Fatalf("schema upgraded from version %d differs from a fresh install:\n%s", v, firstDiff(got, want))
			}
			exp := expectations(t, string(body))
			if len(exp) == 0 {
				t.Fatalf("%s expects nothing", file)
			}
			for _, e := range exp {
				var state *string
				if err := pool.QueryRow(ctx, "SELECT millrace.job_state($1)", e.id).Scan(&state); err != nil {
					t.Fatal(err)
				}
				got := "<unknown>"
				if state != nil {
					got = *state
				}
				if got != e.state {
					t.Errorf("job %d: %s after the upgrade from version %d, want %s", e.id, got, v, e.state)
				}
			}
			ins, err := storage.Insert(ctx, pool, []storage.NewJob{{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 25}}, false)
			if err != nil {
				t.Fatal(err)
			}
			if ins[0].ID <= maxID {
				t.Errorf("a new job got id %d, not above the dump's %d", ins[0].ID, maxID)
			}
			if v >= 5 {
				dup, err := storage.Insert(ctx, pool, []storage.NewJob{{Queue: "q", Kind: "k", Args: []byte(`{}`), UniqueKey: "u1", UniqueStates: 2 | 4 | 8, MaxAttempts: 25}}, false)
				if err != nil {
					t.Fatal(err)
				}
				if !dup[0].Duplicate {
					t.Errorf("unique key u1 no longer blocks after the upgrade from version %d", v)
				}
			}
		})
	}
}

func firstDiff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("line %d\n got: %s\nwant: %s", i+1, g, w)
		}
	}
	return ""
}

func expectations(t *testing.T, dump string) []expectation {
	var out []expectation
	sc := bufio.NewScanner(strings.NewReader(dump))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "-- expect ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || len(f) != 2 {
			t.Fatalf("bad expectation %q", sc.Text())
		}
		out = append(out, expectation{id, f[1]})
	}
	return out
}

// withRoles creates the roles a dump's grants name, as migration 4 would.
func withRoles(ctx context.Context, t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(ctx, `DO $$
	DECLARE r text;
	BEGIN
	    FOREACH r IN ARRAY ARRAY['millrace_producer', 'millrace_worker', 'millrace_admin'] LOOP
	        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
	            BEGIN
	                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
	            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
	            END;
	        END IF;
	    END LOOP;
	END $$`)
	if err != nil {
		t.Fatal(err)
	}
}

// restored returns a pool on a new database holding dump.
func restored(t *testing.T, dump string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	withRoles(ctx, t, pool)
	if _, err := pool.Exec(ctx, dump); err != nil {
		t.Fatalf("restoring the dump: %v", err)
	}
	// pg_dump's header empties the search path for the session.
	pool.Reset()
	return pool
}

// writeDump migrates a new database to version v with the frozen
// migrations, populates it through that version's own functions, and
// writes it with pg_dump, followed by what each job must be after an
// upgrade.
func writeDump(t *testing.T, v int) {
	t.Helper()
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	withRoles(ctx, t, pool)
	if _, err := schema.Up(ctx, pool, v); err != nil {
		t.Fatal(err)
	}
	var exp []expectation
	one := func(sql string, args ...any) int64 {
		t.Helper()
		var id int64
		if err := pool.QueryRow(ctx, sql, args...).Scan(&id); err != nil {
			t.Fatalf("version %d: %s: %v", v, sql, err)
		}
		return id
	}
	if v < 5 {
		// Versions 1 to 4 hold live and scheduled jobs.
		for i := 0; i < 3; i++ {
			id := one(`SELECT millrace.enqueue(p_kind => 'k', p_args => $1::jsonb, p_queue => 'q')`, fmt.Sprintf(`{"n":%d}`, i))
			exp = append(exp, expectation{id, "available"})
		}
		id := one(`SELECT millrace.enqueue(p_kind => 'k', p_args => '{}', p_queue => 'q', p_run_at => now() + interval '10 years')`)
		exp = append(exp, expectation{id, "scheduled"})
	} else {
		store := &storage.Store{Pool: pool}
		far := time.Now().AddDate(10, 0, 0)
		jobs := []storage.NewJob{
			{Queue: "w", Kind: "k", Args: []byte(`{"n":1}`)},                 // completed
			{Queue: "w", Kind: "k", Args: []byte(`{"n":2}`), MaxAttempts: 1}, // discarded
			{Queue: "w", Kind: "k", Args: []byte(`{"n":3}`), MaxAttempts: 5}, // failed, retries in 10 years
			{Queue: "w", Kind: "k", Args: []byte(`{"n":4}`)},                 // running: claimed, no ack
			{Queue: "q", Kind: "k", Args: []byte(`{"n":5}`)},                 // available
			{Queue: "q", Kind: "k", Args: []byte(`{"n":6}`), RunAt: far},     // scheduled
			{Queue: "q", Kind: "k", Args: []byte(`{"n":7}`), UniqueKey: "u1", UniqueStates: 2 | 4 | 8},
			{Queue: "q", Kind: "k", Args: []byte(`{"n":8}`)}, // cancelled
		}
		for i := range jobs {
			if jobs[i].MaxAttempts == 0 {
				jobs[i].MaxAttempts = 25
			}
		}
		ins, err := storage.Insert(ctx, pool, jobs, false)
		if err != nil {
			t.Fatal(err)
		}
		owner := int32(one(`SELECT millrace.register('dump', 'host', 1)`))
		batches, err := store.Claim(ctx, "w", owner, 1, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20})
		if err != nil || len(batches) != 1 || len(batches[0].Jobs) != 4 {
			t.Fatalf("claim: %v %v", batches, err)
		}
		b := batches[0]
		now := time.Now()
		acks := []storage.Ack{
			{Batch: b, Job: &b.Jobs[0], State: storage.AckCompleted, Started: now, Finished: now},
			{Batch: b, Job: &b.Jobs[1], State: storage.AckDiscarded, Err: "boom", Started: now, Finished: now},
			{Batch: b, Job: &b.Jobs[2], State: storage.AckRetried, Err: "again", RetryAt: far, Started: now, Finished: now},
		}
		if _, err := store.Flush(ctx, owner, 1, false, acks, nil); err != nil {
			t.Fatal(err)
		}
		if s := one(`SELECT length(millrace.cancel($1))`, ins[7].ID); s == 0 {
			t.Fatal("cancel said nothing")
		}
		exp = append(exp,
			expectation{ins[0].ID, "completed"}, expectation{ins[1].ID, "discarded"},
			expectation{ins[2].ID, "scheduled"}, expectation{ins[3].ID, "running"},
			expectation{ins[4].ID, "available"}, expectation{ins[5].ID, "scheduled"},
			expectation{ins[6].ID, "available"}, expectation{ins[7].ID, "cancelled"})
		// The claiming process is gone after the dump: its batch stays
		// running until a rescue, which the test does not run.
	}
	bin, err := testkit.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "pg_dump"), "--no-owner", "--inserts", "--schema=millrace", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- millrace schema version %d, populated and dumped by TestUpgradeFromEachVersion -update-dumps.\n", v)
	b.WriteString("-- Frozen: version " + strconv.Itoa(v) + "'s migrations never change, so neither does this file.\n")
	for _, e := range exp {
		fmt.Fprintf(&b, "-- expect %d %s\n", e.id, e.state)
	}
	for _, line := range strings.SplitAfter(string(out), "\n") {
		// psql meta-commands (\restrict): the test restores with pgx.
		if !strings.HasPrefix(line, "\\") {
			b.WriteString(line)
		}
	}
	dir := filepath.Join("testdata", "upgrade")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("v%d.sql", v)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
