package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
)

// jobs show and jobs list, as a table and as JSON, mask a job's secrets
// by the dashboard's rule (package redact): its arguments'
// "password": "..." and URL passwords, and its attempts' errors. Before,
// the command printed them as stored.
func TestJobsOutputRedacted(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	a := testkit.Enqueue(t, pool, "sync", "default", `{"password": "hunter2", "dsn": "postgres://bob:hunter2@db1/app"}`, 0)
	d := clientkit.Discard(t, pool, "default", "connect postgres://bob:hunter2@db1/app: refused")
	for _, args := range [][]string{
		{"jobs", "show", fmt.Sprint(a)}, {"jobs", "show", fmt.Sprint(a), "--json"},
		{"jobs", "show", fmt.Sprint(d)}, {"jobs", "show", fmt.Sprint(d), "--json"},
		{"jobs", "list"}, {"jobs", "list", "--json"},
	} {
		code, out, errs := millrace(t, append(args, "--database-url", u)...)
		if code != 0 {
			t.Errorf("millrace %s: exit %d %s", strings.Join(args, " "), code, errs)
			continue
		}
		if strings.Contains(out, "hunter2") {
			t.Errorf("millrace %s shows a password:\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, "bob:***@db1") {
			t.Errorf("millrace %s: want the URL shown with its password masked (bob:***@db1):\n%s", strings.Join(args, " "), out)
		}
	}
}
