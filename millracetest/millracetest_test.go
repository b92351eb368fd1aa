package millracetest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millracetest"
)

// recordT records the first fatal failure and stops the goroutine, as a
// *testing.T does.
type recordT struct {
	testing.TB
	msg string
}

func (*recordT) Helper() {}

func (r *recordT) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recordT on its own goroutine and returns the failure
// it reported ("" if none).
func run(f func(t testing.TB)) string {
	r := &recordT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// newPool is the kit's: a pool on a fresh database at the current schema.
var newPool = testkit.DB

func TestRequire(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	client, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}

	// A job committed by another transaction is not this one's.
	if _, err := client.Insert(ctx, WelcomeArgs{To: "old@example.com"}, nil); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if msg := run(func(t testing.TB) { millracetest.RequireNotInserted[WelcomeArgs](ctx, t, tx, nil) }); msg != "" {
		t.Fatalf("nothing inserted yet, but: %s", msg)
	}
	if msg := run(func(t testing.TB) { millracetest.RequireInsertedMany(ctx, t, tx, nil) }); msg != "" {
		t.Fatalf("nothing inserted yet, but: %s", msg)
	}

	uniq := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}
	for _, to := range []string{"a@example.com", "b@example.com", "a@example.com"} {
		if _, err := client.InsertTx(ctx, tx, WelcomeArgs{To: to}, uniq); err != nil {
			t.Fatal(err)
		}
	}
	// Inserted in a savepoint that commits: still this transaction's.
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.InsertTx(ctx, sp, AuditArgs{Event: "x"}, &millrace.InsertOpts{RunAt: time.Now().Add(time.Hour), MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := sp.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Two welcome jobs (the third was a duplicate): one of them alone
	// does not match.
	msg := run(func(t testing.TB) { millracetest.RequireInserted[WelcomeArgs](ctx, t, tx, nil) })
	if !strings.Contains(msg, "2 jobs of kind welcome match, want 1") {
		t.Fatalf("two welcome jobs: %q", msg)
	}
	var got *millracetest.InsertedJob[WelcomeArgs]
	msg = run(func(t testing.TB) {
		got = millracetest.RequireInserted(ctx, t, tx, &millracetest.RequireOpts[WelcomeArgs]{
			Args: func(a WelcomeArgs) bool { return a.To == "b@example.com" }})
	})
	if msg != "" || got == nil || got.Args.To != "b@example.com" || got.Scheduled {
		t.Fatalf("by args: %q %+v", msg, got)
	}
	msg = run(func(t testing.TB) {
		millracetest.RequireInserted(ctx, t, tx, &millracetest.RequireOpts[AuditArgs]{Queue: "other"})
	})
	if !strings.Contains(msg, "queue default, want other") {
		t.Fatalf("wrong queue: %q", msg)
	}
	var audit *millracetest.InsertedJob[AuditArgs]
	msg = run(func(t testing.TB) {
		audit = millracetest.RequireInserted(ctx, t, tx, &millracetest.RequireOpts[AuditArgs]{MaxAttempts: 3})
	})
	if msg != "" || !audit.Scheduled || time.Until(audit.RunAt) < 59*time.Minute {
		t.Fatalf("scheduled audit: %q %+v", msg, audit)
	}

	msg = run(func(t testing.TB) {
		millracetest.RequireInsertedMany(ctx, t, tx, []millracetest.ExpectedJob{{Kind: "welcome"}, {Kind: "audit"}, {Kind: "welcome"}})
	})
	if !strings.Contains(msg, "job 2 of 3 inserted in this transaction has kind welcome, want audit") {
		t.Fatalf("out of order: %q", msg)
	}
	msg = run(func(t testing.TB) {
		millracetest.RequireInsertedMany(ctx, t, tx, []millracetest.ExpectedJob{{Kind: "welcome"}, {Kind: "welcome"}})
	})
	if !strings.Contains(msg, "3 jobs inserted in this transaction, want 2") {
		t.Fatalf("too few expected: %q", msg)
	}
	var all []millracetest.Inserted
	msg = run(func(t testing.TB) {
		all = millracetest.RequireInsertedMany(ctx, t, tx, []millracetest.ExpectedJob{
			{Kind: "welcome"}, {Kind: "welcome"}, {Kind: "audit", MaxAttempts: 3, Priority: new(0)}})
	})
	if msg != "" || len(all) != 3 {
		t.Fatalf("in order: %q %v", msg, all)
	}
}

// A savepoint rolled back takes its jobs with it.
func TestRequireSavepointRolledBack(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	client, _ := millrace.NewClient(pool, millrace.Config{})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	sp, _ := tx.Begin(ctx)
	if _, err := client.InsertTx(ctx, sp, WelcomeArgs{To: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	sp.Rollback(ctx)
	if msg := run(func(t testing.TB) { millracetest.RequireNotInserted[WelcomeArgs](ctx, t, tx, nil) }); msg != "" {
		t.Fatal(msg)
	}
}

func TestWorkDefaults(t *testing.T) {
	var got millrace.Job[ReportArgs]
	w := millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[ReportArgs]) error {
		got = *j
		return nil
	})
	if err := millracetest.Work(context.Background(), w, ReportArgs{Account: "a", Rows: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 || got.Attempt != 1 || got.MaxAttempts != millrace.DefaultMaxAttempts || got.Queue != millrace.DefaultQueue ||
		got.Kind != "report" || got.CreatedAt.IsZero() || !got.ReadyAt.Equal(got.CreatedAt) || got.Args.Account != "a" {
		t.Fatalf("job: %+v", got)
	}
	// A job run this way cannot be completed in a transaction.
	w = millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[ReportArgs]) error {
		return millrace.CompleteTx(ctx, nil, j)
	})
	if err := millracetest.Work(context.Background(), w, ReportArgs{}, nil); err != millrace.ErrNotRunning {
		t.Fatalf("CompleteTx: %v", err)
	}
}
