package millrace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/millrace/millrace"
)

// rawArgs is a job of any kind with any JSON arguments.
type rawArgs struct {
	kind string
	raw  string
}

func (r rawArgs) Kind() string                 { return r.kind }
func (r rawArgs) MarshalJSON() ([]byte, error) { return []byte(r.raw), nil }

// ruleMessage is the message of a refused input: the Go rules and the SQL
// rules (millrace.check_job) say the same thing.
func ruleMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzEnqueueRules sends the same job through the Go client and through
// SQL millrace.enqueue: both refuse it, or both store it exactly as given
// (kind, queue, priority, max attempts, due time, and the same JSON).
// Where both check a rule, they give the same message. runAt is in Unix
// seconds (0: now), kept within what a timestamp can carry. The seed
// corpus is in testdata/fuzz/FuzzEnqueueRules (with the edges of years 1
// and 9999); `go test -run Fuzz` runs it. TestRunAtRules tries the
// infinities, which a Go time cannot hold.
func FuzzEnqueueRules(f *testing.F) {
	ctx := context.Background()
	pool := newDB(f)
	client, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("k", "default", 1, 25, `{"a":1}`, int64(0))
	f.Fuzz(func(t *testing.T, kind, queue string, priority, maxAttempts int, args string, runAt int64) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a hang fails with its input
		defer cancel()
		var at *time.Time // the same instant to both; NULL to SQL when Go's is zero (now)
		if runAt %= 1 << 43; runAt != 0 {
			x := time.Unix(runAt, 0).UTC()
			at = &x
		}
		opts := &millrace.InsertOpts{Queue: queue, Priority: priority, MaxAttempts: maxAttempts}
		if at != nil {
			opts.RunAt = *at
		}
		goID, goErr := client.Insert(ctx, rawArgs{kind, args}, opts)
		// The Go client's zero values mean the defaults; say them to SQL.
		if queue == "" {
			queue = millrace.DefaultQueue
		}
		if maxAttempts == 0 {
			maxAttempts = 25
		}
		var sqlID int64
		sqlErr := pool.QueryRow(ctx, "SELECT millrace.enqueue($1, $2::jsonb, $3, $4, $6, $5, false)",
			kind, args, queue, priority, maxAttempts, at).Scan(&sqlID)
		if (goErr == nil) != (sqlErr == nil) {
			t.Fatalf("kind %q queue %q priority %d max %d args %q run_at %v: Go %v, SQL %v", kind, queue, priority, maxAttempts, args, at,
				goErr, sqlErr)
		}
		if goErr != nil {
			gm, sm := ruleMessage(goErr), ruleMessage(sqlErr)
			if strings.HasPrefix(sm, "millrace: ") && strings.HasPrefix(gm, "millrace: ") && gm != sm && !strings.Contains(gm, "encoding args") {
				t.Fatalf("the same input is refused with different messages: Go %q, SQL %q", gm, sm)
			}
			return
		}
		var due []*time.Time
		for _, id := range []int64{goID.ID, sqlID} {
			// Read the stored row back directly (the test runs as the
			// schema's owner); millrace.jobs would recompute every job.
			var j millrace.JobInfo
			var d *time.Time
			err := pool.QueryRow(ctx, `SELECT kind, queue, priority, max_attempts, args, NULL FROM millrace.job WHERE id = $1
				UNION ALL SELECT kind, queue, priority, max_attempts, args, due_at FROM millrace.sched WHERE id = $1`, id).
				Scan(&j.Kind, &j.Queue, &j.Priority, &j.MaxAttempts, &j.Args, &d)
			if err != nil {
				t.Fatalf("job %d: %v", id, err)
			}
			due = append(due, d)
			// The same JSON value: jsonb keeps numbers by value (-0 is 0)
			// and objects without duplicate keys, as JSON does.
			var want, got any
			json.Unmarshal([]byte(args), &want)
			json.Unmarshal(j.Args, &got)
			if j.Kind != kind || j.Queue != queue || j.Priority != priority || j.MaxAttempts != maxAttempts || !reflect.DeepEqual(want, got) {
				t.Fatalf("job %d stored as %+v; given kind %q queue %q priority %d max %d args %s", id, j, kind, queue, priority, maxAttempts, args)
			}
		}
		if (due[0] == nil) != (due[1] == nil) || (due[0] != nil && !due[0].Equal(*due[1])) {
			t.Fatalf("run_at %v: due %v through Go, %v through SQL", at, due[0], due[1])
		}
	})
}

// FuzzUniqueArgs inserts two jobs unique by arguments, a then b: b is a
// duplicate of a exactly when Postgres holds them for the same JSON value
// (a::jsonb = b::jsonb). Two different values never share a key, however
// large or precise their numbers.
func FuzzUniqueArgs(f *testing.F) {
	ctx := context.Background()
	pool := newDB(f)
	client, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{
		{`{"order_id":1234567890123456789}`, `{"order_id":1234567890123456700}`},
		{`9007199254740993`, `9007199254740992`},
		{`[1.0, 1e2]`, `[1, 100]`},
		{`{"a":0.1}`, `{"a":0.1000000000000000055511151231257827}`},
		{`{"a":-0}`, `{"a":0}`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`"\u00e9"`, `"é"`},
		{`1e400`, `1e401`},
	} {
		f.Add(s[0], s[1])
	}
	var n int
	f.Fuzz(func(t *testing.T, a, b string) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n++
		opts := &millrace.InsertOpts{Queue: fmt.Sprintf("fz%d", n), Unique: &millrace.UniqueOpts{ByArgs: true, ByQueue: true}}
		ra, err := client.Insert(ctx, rawArgs{"u", a}, opts)
		if err != nil {
			return
		}
		rb, err := client.Insert(ctx, rawArgs{"u", b}, opts)
		if err != nil {
			return
		}
		var same bool
		if err := pool.QueryRow(ctx, "SELECT $1::jsonb = $2::jsonb", a, b).Scan(&same); err != nil {
			t.Fatal(err)
		}
		if rb.Duplicate != same || (same && rb.ID != ra.ID) {
			t.Fatalf("%s then %s: duplicate %v (jobs %d, %d); Postgres says the same value: %v", a, b, rb.Duplicate, ra.ID, rb.ID, same)
		}
	})
}
