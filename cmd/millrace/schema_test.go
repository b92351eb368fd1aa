package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/testkit"
)

// On a schema older than the binary's, every command that reads or
// changes the queue says in one line where the schema is, what the binary
// needs and to run migrate up, and does nothing; on a newer schema it says
// so in one line too. Before, queues failed on a missing column, jobs list
// answered "no job matches" and queue pause succeeded.
func TestCommandsCheckSchemaVersion(t *testing.T) {
	u := testkit.EmptyDBURL(t)
	want := schema.Latest()
	if code, _, errs := millrace(t, "migrate", "up", "5", "--database-url", u); code != 0 {
		t.Fatalf("migrate up 5: exit %d %s", code, errs)
	}
	cmds := [][]string{{"queues"}, {"jobs", "list"}, {"jobs", "show", "1"}, {"jobs", "cancel", "1", "--yes"},
		{"jobs", "retry", "1", "--yes"}, {"queue", "pause", "email", "--yes", "--create"}, {"queue", "resume", "email"}}
	for _, c := range cmds {
		code, out, errs := millrace(t, append(c, "--database-url", u)...)
		if code != 1 || out != "" {
			t.Errorf("millrace %s on schema 5: exit %d, stdout %q: want exit 1 and nothing on stdout", strings.Join(c, " "), code, out)
		}
		oneLineErr(t, errs, fmt.Sprintf("is at version 5 and this binary needs version %d: run `millrace migrate up`", want))
	}
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var paused int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM millrace.queue_state WHERE paused").Scan(&paused); err == nil && paused != 0 {
		t.Errorf("queue pause on schema 5 paused a queue")
	}

	// No schema at all.
	code, _, errs := millrace(t, "queues", "--database-url", testkit.EmptyDBURL(t))
	if code != 1 {
		t.Errorf("queues without a schema: exit %d", code)
	}
	oneLineErr(t, errs, fmt.Sprintf("no millrace schema and this binary needs version %d: run `millrace migrate up`", want))

	// A newer schema than the binary's.
	if code, _, errs := millrace(t, "migrate", "up", "--database-url", u); code != 0 {
		t.Fatalf("migrate up: exit %d %s", code, errs)
	}
	if code, _, errs := millrace(t, "queues", "--database-url", u); code != 0 {
		t.Fatalf("queues on the binary's schema: exit %d %s", code, errs)
	}
	if _, err := conn.Exec(context.Background(), "INSERT INTO millrace.migration (version, name) VALUES ($1, 'future')", want+1); err != nil {
		t.Fatal(err)
	}
	code, _, errs = millrace(t, "jobs", "list", "--database-url", u)
	if code != 1 {
		t.Errorf("jobs list on a newer schema: exit %d", code)
	}
	oneLineErr(t, errs, fmt.Sprintf("is at version %d, newer than this binary's %d", want+1, want))
}
