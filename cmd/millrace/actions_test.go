package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
)

// cancel and retry look at each job before asking for --yes: a job that
// does not exist, or that the action would leave as it is, is said so in
// one line, without asking; the answer is printed once; a retry of a
// completed job says what docs/ui.md says retry does (it runs again only
// a discarded or cancelled job). queue pause names an unknown queue
// before asking too.
func TestJobsActionsCheckBeforeAsking(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	live := testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	done := clientkit.Complete(t, pool, "default", "ok")
	gone := clientkit.Discard(t, pool, "default", "boom")
	if code, _, errs := millrace(t, "jobs", "cancel", fmt.Sprint(live), "--yes", "--database-url", u); code != 0 {
		t.Fatalf("cancel: exit %d %s", code, errs)
	}
	waiting := testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "cancel", "99999"}, "job 99999 does not exist"},
		{[]string{"jobs", "retry", "99999"}, "job 99999 does not exist"},
		{[]string{"jobs", "cancel", fmt.Sprint(live)}, fmt.Sprintf("job %d has finished (cancelled): nothing to cancel", live)},
		{[]string{"jobs", "cancel", fmt.Sprint(live), "--yes"}, fmt.Sprintf("job %d has finished (cancelled): nothing to cancel", live)},
		{[]string{"jobs", "retry", fmt.Sprint(done)}, fmt.Sprintf("job %d completed: retry runs again only a discarded or cancelled job (nothing done)", done)},
		{[]string{"jobs", "retry", fmt.Sprint(done), "--yes"}, fmt.Sprintf("job %d completed: retry runs again only a discarded or cancelled job (nothing done)", done)},
		{[]string{"jobs", "retry", fmt.Sprint(waiting), "--yes"}, fmt.Sprintf("job %d has not finished", waiting)},
		{[]string{"queue", "pause", "nosuch"}, "no queue nosuch"},
	} {
		code, out, errs := millrace(t, append(tc.args, "--database-url", u)...)
		if code != 1 || out != "" || strings.Contains(errs, "--yes") {
			t.Errorf("millrace %s: exit %d, stdout %q, stderr %q: want exit 1, no --yes asked, nothing on stdout", strings.Join(tc.args, " "), code, out, errs)
		}
		oneLineErr(t, errs, tc.want)
	}

	// Several jobs: asks only for those it would act on, naming the others.
	code, out, errs := millrace(t, "jobs", "cancel", fmt.Sprint(waiting), fmt.Sprint(live), "--database-url", u)
	if code != 1 || out != "" {
		t.Errorf("cancel of a waiting and a finished job without --yes: exit %d %q", code, out)
	}
	oneLineErr(t, errs, fmt.Sprintf("job %d will be cancelled", waiting))
	oneLineErr(t, errs, fmt.Sprintf("pass --yes to confirm (left as they are: job %d has finished", live))
	// A retry that does something says so once, on stdout.
	code, out, errs = millrace(t, "jobs", "retry", fmt.Sprint(gone), "--yes", "--database-url", u)
	if code != 0 || strings.Count(out+errs, "retried as job") != 1 || errs != "" {
		t.Errorf("retry of a discarded job: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if d, err := ops.GetJob(t.Context(), pool, waiting); err != nil || d.Live == nil {
		t.Errorf("a refused cancel changed job %d: %+v %v", waiting, d, err)
	}
}
