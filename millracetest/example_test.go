package millracetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/millracetest"
)

// WelcomeArgs are the arguments of the application's welcome email.
type WelcomeArgs struct {
	To string `json:"to"`
}

// Kind names the job kind.
func (WelcomeArgs) Kind() string { return "welcome" }

// AuditArgs are the arguments of the application's audit job.
type AuditArgs struct {
	Event string `json:"event"`
}

// Kind names the job kind.
func (AuditArgs) Kind() string { return "audit" }

// ReminderArgs are the arguments of a job the sign-up never enqueues.
type ReminderArgs struct{}

// Kind names the job kind.
func (ReminderArgs) Kind() string { return "reminder" }

// signUp is the application code under test: inside the caller's
// transaction it enqueues a welcome email and, an hour later, an audit.
func signUp(ctx context.Context, client *millrace.Client, tx pgx.Tx, email string) error {
	if _, err := client.InsertTx(ctx, tx, WelcomeArgs{To: email}, &millrace.InsertOpts{Queue: "email"}); err != nil {
		return err
	}
	_, err := client.InsertTx(ctx, tx, AuditArgs{Event: "signup"},
		&millrace.InsertOpts{Priority: 5, RunAt: time.Now().Add(time.Hour)})
	return err
}

// A test asserts what the code under test enqueued, inside its
// transaction, before (or instead of) committing it.
func ExampleRequireInserted() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	client, _ := millrace.NewClient(pool, millrace.Config{})
	t := printT{} // in a test: the *testing.T

	tx, _ := pool.Begin(ctx)
	defer tx.Rollback(ctx)
	if err := signUp(ctx, client, tx, "ada@example.com"); err != nil {
		panic(err)
	}

	welcome := millracetest.RequireInserted(ctx, t, tx, &millracetest.RequireOpts[WelcomeArgs]{
		Queue: "email",
		Args:  func(a WelcomeArgs) bool { return a.To == "ada@example.com" },
	})
	fmt.Println(welcome.Kind, "to", welcome.Args.To, "in queue", welcome.Queue)

	audit := millracetest.RequireInserted(ctx, t, tx, &millracetest.RequireOpts[AuditArgs]{Priority: new(5)})
	fmt.Println(audit.Kind, "scheduled:", audit.Scheduled)

	millracetest.RequireNotInserted[ReminderArgs](ctx, t, tx, nil)
	millracetest.RequireInsertedMany(ctx, t, tx, []millracetest.ExpectedJob{
		{Kind: "welcome", Queue: "email"},
		{Kind: "audit", Priority: new(5)},
	})

	// What a failing assertion reports:
	millracetest.RequireInserted[ReminderArgs](ctx, t, tx, nil)
	millracetest.RequireNotInserted(ctx, t, tx, &millracetest.RequireOpts[WelcomeArgs]{Queue: "email"})
	// Output:
	// welcome to ada@example.com in queue email
	// audit scheduled: true
	// FAIL: millracetest: no job of kind reminder was inserted in this transaction; inserted: welcome (id 1, queue email, priority 0, max attempts 25), audit (id 2, queue default, priority 5, max attempts 25)
	// FAIL: millracetest: a job of kind welcome was inserted in this transaction (id 1, queue email, priority 0, args {"to": "ada@example.com"}), want none
}

// ReportArgs are the arguments of a report job.
type ReportArgs struct {
	Account string `json:"account"`
	Rows    int    `json:"rows"`
}

// Kind names the job kind.
func (ReportArgs) Kind() string { return "report" }

var errNoRows = errors.New("nothing to report")

// reportWorker is the worker under test.
var reportWorker = millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[ReportArgs]) error {
	switch {
	case job.Args.Rows == 0:
		return millrace.JobCancel(errNoRows)
	case job.Args.Account == "":
		return millrace.JobDiscard(errors.New("no account"))
	case job.Args.Rows > 1000 && job.Attempt == 1:
		return millrace.JobSnooze(time.Minute) // big reports wait for the night
	case job.Args.Rows > 1000:
		select {
		case <-time.After(time.Minute):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
})

// Work runs a worker's job in a unit test: no client, no database. The
// outcome a worker asks for is read from the error it returns.
func ExampleWork() {
	ctx := context.Background()

	err := millracetest.Work(ctx, reportWorker, ReportArgs{Account: "acme", Rows: 10}, nil)
	fmt.Println("completed:", err == nil)

	err = millracetest.Work(ctx, reportWorker, ReportArgs{Account: "acme"}, nil)
	fmt.Println("cancelled:", millrace.IsCancel(err), errors.Is(err, errNoRows))

	err = millracetest.Work(ctx, reportWorker, ReportArgs{Rows: 5}, nil)
	fmt.Println("discarded:", millrace.IsDiscard(err))

	err = millracetest.Work(ctx, reportWorker, ReportArgs{Account: "acme", Rows: 5000}, nil)
	d, snoozed := millrace.IsSnooze(err)
	fmt.Println("snoozed:", snoozed, d)

	// The second attempt runs, and its timeout ends its context.
	err = millracetest.Work(ctx, reportWorker, ReportArgs{Account: "acme", Rows: 5000},
		&millracetest.WorkOpts{Attempt: 2, Timeout: 10 * time.Millisecond})
	fmt.Println("timed out:", errors.Is(err, millrace.ErrTimeout))
	// Output:
	// completed: true
	// cancelled: true true
	// discarded: true
	// snoozed: true 1m0s
	// timed out: true
}
