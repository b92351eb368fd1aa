package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

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

// migrate down checks every step before taking any: down 3 on version 8
// reverted 8, then failed on 7 (which cannot be reverted in place) and
// left the schema at 7. It now refuses in one line, reverting nothing,
// with or without --yes; a down that can be done still is.
func TestMigrateDownRefusesBeforeReverting(t *testing.T) {
	u := testkit.EmptyDBURL(t)
	if code, _, errs := millrace(t, "migrate", "up", "8", "--database-url", u); code != 0 {
		t.Fatalf("migrate up 8: exit %d %s", code, errs)
	}
	version := func() int {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var v int
		if err := conn.QueryRow(context.Background(), "SELECT max(version) FROM millrace.migration").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, yes := range []bool{true, false} {
		args := []string{"migrate", "down", "3", "--database-url", u}
		if yes {
			args = append(args, "--yes")
		}
		code, out, errs := millrace(t, args...)
		if code != 1 || out != "" {
			t.Errorf("down 3 (--yes %v) on 8: exit %d, stdout %q: want exit 1, nothing reverted", yes, code, out)
		}
		oneLineErr(t, errs, "down 3 refused, nothing reverted: schema version 7 cannot be reverted to version 6 in place")
		oneLineErr(t, errs, "from version 8 a down goes no lower than 7")
		if v := version(); v != 8 {
			t.Fatalf("down 3 (--yes %v) left the schema at %d, want 8", yes, v)
		}
	}
	code, out, errs := millrace(t, "migrate", "down", "7", "--yes", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "reverted 8" {
		t.Fatalf("down 7 --yes on 8: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if v := version(); v != 7 {
		t.Fatalf("down 7 left the schema at %d", v)
	}
	code, out, _ = millrace(t, "migrate", "down", "7", "--yes", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "already at version 7: nothing to revert" {
		t.Errorf("down 7 on 7: exit %d, stdout %q", code, out)
	}
}

// migrate up as a superuser warns in one line on stderr, pointing at
// docs/security.md (the schema's owner should not be one), and migrates;
// as a role that is not, it says nothing of it.
func TestMigrateUpWarnsSuperuser(t *testing.T) {
	ctx := context.Background()
	u := testkit.EmptyDBURL(t)
	code, out, errs := millrace(t, "migrate", "up", "--database-url", u)
	if code != 0 || !strings.Contains(out, "applied 1") {
		t.Fatalf("migrate up as a superuser: exit %d %q %q", code, out, errs)
	}
	oneLineErr(t, errs, "a superuser: the schema's owner should not be one")
	oneLineErr(t, errs, "docs/security.md")

	// A role that may create in the database, not a superuser.
	u2 := testkit.EmptyDBURL(t)
	conn, err := pgx.Connect(ctx, u2)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role := fmt.Sprintf("owner_%d", time.Now().UnixNano()%1e9)
	db := conn.Config().Database
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN CREATEROLE; GRANT CREATE ON DATABASE %s TO %[1]s",
		role, pgx.Identifier{db}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Exec(ctx, "DROP SCHEMA IF EXISTS millrace CASCADE")
		conn.Exec(ctx, fmt.Sprintf("DROP OWNED BY %[1]s; DROP ROLE %[1]s", role))
	})
	pu, err := url.Parse(u2)
	if err != nil || pu.Scheme == "" {
		t.Skipf("needs a URL-form server URL: %v", err)
	}
	pu.User = url.User(role)
	code, _, errs = millrace(t, "migrate", "up", "--database-url", pu.String())
	if strings.Contains(errs, "superuser") {
		t.Errorf("migrate up as %s (not a superuser): exit %d, stderr %q: want no superuser warning", role, code, errs)
	}
}
