package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	mr "github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// The commands that write, pointed at a hot standby, say in one line that
// it is a standby and to point --database-url at the primary (issue 31,
// 9), with no password; the commands that only read work there.
func TestWritingCommandsOnAStandby(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL set: a standby needs a throwaway cluster of the test's own")
	}
	ctx := context.Background()
	cl, err := testkit.Start(ctx, testkit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	primary, err := pgxpool.New(ctx, cl.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if err := mr.Migrate(ctx, primary); err != nil {
		t.Fatal(err)
	}
	id := testkit.Enqueue(t, primary, "email.send", "email", `{}`, 0)
	sb := testkit.AddStandby(t, cl, testkit.Options{})
	defer sb.Stop()
	// Trust authentication ignores the password; it must not be printed.
	u := fmt.Sprintf("postgres://postgres:s3cretpw@127.0.0.1:%d/postgres?sslmode=disable", sb.Port)
	want := fmt.Sprintf("the server at 127.0.0.1:%d is a hot standby (read-only, in recovery): point --database-url (or DATABASE_URL) at the primary", sb.Port)
	for _, args := range [][]string{
		{"migrate", "up"},
		{"migrate", "down", "0", "--yes"},
		{"jobs", "cancel", fmt.Sprint(id), "--yes"},
		{"jobs", "retry", fmt.Sprint(id), "--yes"},
		{"queue", "pause", "email", "--yes"},
		{"queue", "resume", "email"},
	} {
		code, out, errs := millrace(t, append(args, "--database-url", u)...)
		if code != 1 || out != "" || strings.Contains(errs, "s3cretpw") || strings.Contains(errs, "read-only transaction") {
			t.Errorf("%s on the standby: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errs)
		}
		oneLineErr(t, errs, want)
	}
	for _, args := range [][]string{{"migrate", "status"}, {"queues"}, {"jobs", "show", fmt.Sprint(id)}} {
		if code, _, errs := millrace(t, append(args, "--database-url", u)...); code != 0 {
			t.Errorf("%s on the standby: exit %d %s", strings.Join(args, " "), code, errs)
		}
	}
}
