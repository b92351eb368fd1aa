package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	mr "github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
)

// millrace runs the real command (this test binary, started again with
// MILLRACE_ARGS; see TestMain) and returns its exit code, stdout and
// stderr. DATABASE_URL is cleared: each call passes --database-url.
func millrace(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MILLRACE_ARGS="+string(a), "DATABASE_URL=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func oneLineErr(t *testing.T, stderr, want string) {
	t.Helper()
	s := strings.TrimSpace(stderr)
	if strings.Count(s, "\n") != 0 || !strings.Contains(s, want) {
		t.Errorf("stderr %q: want one line containing %q", stderr, want)
	}
}

func TestQueuesAndPauseCommands(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	testkit.Enqueue(t, pool, "report", "reports", `{}`, time.Hour)

	code, out, errs := millrace(t, "queues", "--database-url", u)
	if code != 0 {
		t.Fatalf("queues: exit %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "OLDEST WAITING") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "email") {
		t.Fatalf("queues:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[1] != "2" || f[len(f)-2] != "no" || f[len(f)-1] != "-" {
		t.Errorf("email row: %q", lines[1])
	}

	// pause asks for --yes, and changes nothing without it.
	code, _, errs = millrace(t, "queue", "pause", "email", "--database-url", u)
	if code != 1 {
		t.Errorf("pause without --yes: exit %d", code)
	}
	oneLineErr(t, errs, "--yes")
	if p, _ := ops.Paused(ctx, pool, "email"); p {
		t.Fatal("pause without --yes paused the queue")
	}
	code, out, errs = millrace(t, "queue", "--database-url", u, "pause", "--yes", "email")
	if code != 0 || strings.TrimSpace(out) != "queue email: paused" {
		t.Fatalf("pause --yes: exit %d %q %s", code, out, errs)
	}
	if p, _ := ops.Paused(ctx, pool, "email"); !p {
		t.Fatal("queue pause --yes did not pause the queue")
	}
	code, out, _ = millrace(t, "queues", "--json", "--database-url", u)
	var qs []struct {
		Name      string  `json:"name"`
		Available int64   `json:"available"`
		Scheduled int64   `json:"scheduled"`
		Paused    bool    `json:"paused"`
		Oldest    float64 `json:"oldest_waiting_s"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 2 {
		t.Fatalf("queues --json: exit %d %s", code, out)
	}
	if !qs[0].Paused || qs[0].Available != 2 || qs[0].Oldest <= 0 || qs[1].Paused || qs[1].Scheduled != 1 {
		t.Errorf("queues --json: %+v", qs)
	}
	code, out, _ = millrace(t, "queue", "resume", "email", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "queue email: active" {
		t.Fatalf("resume: exit %d %q", code, out)
	}
	if p, _ := ops.Paused(ctx, pool, "email"); p {
		t.Fatal("queue resume did not resume the queue")
	}
	code, _, errs = millrace(t, "queue", "stop", "email", "--database-url", u)
	if code != 1 {
		t.Errorf("queue stop: exit %d", code)
	}
	oneLineErr(t, errs, `unknown command "stop"`)
}

func TestJobsCommands(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	a := testkit.Enqueue(t, pool, "email.send", "email", `{"to":"ada@example.com"}`, 0)
	b := testkit.Enqueue(t, pool, "report", "reports", `{"month":"2026-10"}`, time.Hour)
	d := clientkit.Discard(t, pool, "default", "image cat.png: unsupported format")

	ids := func(out string) []string {
		var r []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			r = append(r, strings.Fields(l)[0])
		}
		return r
	}
	code, out, errs := millrace(t, "jobs", "list", "--database-url", u)
	if code != 0 {
		t.Fatalf("jobs list: exit %d %s", code, errs)
	}
	if got := strings.Join(ids(out), " "); !strings.HasPrefix(got, fmt.Sprint(b, " ", a)) || !strings.HasSuffix(got, fmt.Sprint(d)) {
		t.Errorf("jobs list (live first, newest first, then history): ids %s\n%s", got, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--queue", "email"}, fmt.Sprint(a)},
		{[]string{"--kind", "report"}, fmt.Sprint(b)},
		{[]string{"--state", "scheduled"}, fmt.Sprint(b)},
		{[]string{"--state", "discarded"}, fmt.Sprint(d)},
		{[]string{"--queue", "email", "--since", "1h"}, fmt.Sprint(a)},
	} {
		code, out, errs := millrace(t, append([]string{"jobs", "list", "--database-url", u}, tc.args...)...)
		if code != 0 || strings.Join(ids(out), " ") != tc.want {
			t.Errorf("jobs list %v: exit %d, %q %s; want ids %s", tc.args, code, out, errs, tc.want)
		}
	}
	code, out, _ = millrace(t, "jobs", "list", "--since", "2099-01-01T00:00:00Z", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "no job matches" {
		t.Errorf("jobs list --since the future: %d %q", code, out)
	}
	code, out, _ = millrace(t, "jobs", "list", "--json", "--state", "discarded", "--database-url", u)
	var jobs []ops.Job
	if code != 0 || json.Unmarshal([]byte(out), &jobs) != nil || len(jobs) != 1 || jobs[0].ID != d || !strings.Contains(jobs[0].Error, "unsupported format") {
		t.Errorf("jobs list --json: %d %s", code, out)
	}
	code, _, errs = millrace(t, "jobs", "list", "--state", "lost", "--database-url", u)
	if code != 1 {
		t.Errorf("an unknown state: exit %d", code)
	}
	oneLineErr(t, errs, `unknown state "lost"`)

	code, out, _ = millrace(t, "jobs", "show", fmt.Sprint(a), "--database-url", u)
	if code != 0 || !strings.Contains(out, "available") || !strings.Contains(out, "ada@example.com") || !strings.Contains(out, "no attempt has finished yet") {
		t.Errorf("jobs show (live): %d\n%s", code, out)
	}
	code, out, _ = millrace(t, "jobs", "show", fmt.Sprint(d), "--database-url", u)
	if code != 0 || !strings.Contains(out, "discarded") || !strings.Contains(out, "unsupported format") {
		t.Errorf("jobs show (discarded): %d\n%s", code, out)
	}
	// History keeps a completed job without its args, and says so.
	c := clientkit.Complete(t, pool, "done", "ok")
	code, out, _ = millrace(t, "jobs", "show", fmt.Sprint(c), "--database-url", u)
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, ops.ArgsNotKept) {
		t.Errorf("jobs show (completed): %d\n%s", code, out)
	}
	code, out, _ = millrace(t, "jobs", "show", "--json", fmt.Sprint(d), "--database-url", u)
	var det ops.JobDetail
	if code != 0 || json.Unmarshal([]byte(out), &det) != nil || det.Live != nil || len(det.Attempts) != 1 || det.Attempts[0].StartedAt == nil {
		t.Errorf("jobs show --json: %d %s", code, out)
	}
	code, _, errs = millrace(t, "jobs", "show", "987654", "--database-url", u)
	if code != 1 {
		t.Errorf("show of an unknown job: exit %d", code)
	}
	oneLineErr(t, errs, "job 987654: no such job")

	// cancel and retry ask for --yes before they do anything (of a job
	// they would act on: a waiting one, a discarded one).
	for action, id := range map[string]int64{"cancel": a, "retry": d} {
		code, _, errs = millrace(t, "jobs", action, fmt.Sprint(id), "--database-url", u)
		if code != 1 {
			t.Errorf("%s without --yes: exit %d", action, code)
		}
		oneLineErr(t, errs, "pass --yes to confirm")
	}
	if _, err := ops.GetJob(context.Background(), pool, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := ops.ListJobs(context.Background(), pool, ops.Filter{ID: a}); len(got) != 1 || got[0].State != "available" {
		t.Fatalf("a refused cancel changed the job: %+v", got)
	}
}

// Cancel and retry through the command (schema version 5).
func TestJobsCancelRetryCommands(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	a := testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	code, out, errs := millrace(t, "jobs", "cancel", fmt.Sprint(a), "--yes", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != fmt.Sprintf("job %d: cancelled", a) {
		t.Fatalf("cancel: exit %d %q %s", code, out, errs)
	}
	if d, err := ops.GetJob(ctx, pool, a); err != nil || d.Live != nil || d.Latest().State != "cancelled" {
		t.Fatalf("after cancel: %+v %v", d, err)
	}
	// queues counts it: column CANCELLED, after COMPLETED.
	code, out, _ = millrace(t, "queues", "--database-url", u)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 ||
		strings.Fields(lines[0])[6] != "CANCELLED" || strings.Fields(lines[1])[6] != "1" {
		t.Errorf("queues after a cancel: exit %d\n%s", code, out)
	}
	code, _, errs = millrace(t, "jobs", "cancel", fmt.Sprint(a), "--yes", "--database-url", u)
	if code != 1 {
		t.Errorf("cancel of a finished job: exit %d", code)
	}
	oneLineErr(t, errs, "finished")
	code, out, errs = millrace(t, "jobs", "retry", fmt.Sprint(a), "--yes", "--database-url", u)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), fmt.Sprintf("job %d: retried as job ", a)) {
		t.Fatalf("retry: exit %d %q %s", code, out, errs)
	}
	n := ops.RetriedAs(strings.TrimPrefix(strings.TrimSpace(out), fmt.Sprintf("job %d: ", a)))
	if d, err := ops.GetJob(ctx, pool, n); err != nil || d.Live == nil {
		t.Fatalf("after retry, the new job %d: %+v %v", n, d, err)
	}
	code, _, errs = millrace(t, "jobs", "retry", "987654", "--yes", "--database-url", u)
	if code != 1 {
		t.Errorf("retry of an unknown job: exit %d", code)
	}
	oneLineErr(t, errs, "job 987654 does not exist")
}

// millrace ui serves the dashboard until it is interrupted.
func TestUICommand(t *testing.T) {
	u := testkit.DBURL(t)
	a, _ := json.Marshal([]string{"ui", "--listen", "127.0.0.1:0", "--database-url", u, "--token", "t0k"})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MILLRACE_ARGS="+string(a), "DATABASE_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stderr)
	var addr string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "serving http://"); ok {
			addr, _, _ = strings.Cut(rest, "/")
			break
		}
	}
	if addr == "" {
		t.Fatal("millrace ui did not say where it serves")
	}
	go io.Copy(io.Discard, stderr)
	resp, err := http.Get("http://" + addr + "/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/overview", nil)
	req.Header.Set("Authorization", "Bearer t0k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the token: %d", resp.StatusCode)
	}
}

// On a database without the schema every operator command says, in one
// line, what to run; not the server's SQLSTATE.
func TestNoSchemaNamesMigrate(t *testing.T) {
	u := testkit.EmptyDBURL(t)
	for _, args := range [][]string{{"queues"}, {"jobs", "list"}, {"jobs", "list", "--queue", "q"}, {"jobs", "show", "1"},
		{"jobs", "cancel", "1", "--yes"}, {"jobs", "retry", "1", "--yes"}, {"queue", "pause", "q", "--yes"}, {"queue", "resume", "q"}} {
		code, out, errs := millrace(t, append(args, "--database-url", u)...)
		if code != 1 || out != "" || strings.Contains(errs, "SQLSTATE") {
			t.Errorf("millrace %s: exit %d, stdout %q, stderr %q; want exit 1 and one line naming millrace migrate up", strings.Join(args, " "), code, out, errs)
		}
		oneLineErr(t, errs, "run `millrace migrate up`")
	}
}

// A wrong database name: the root cause first, once (with sslmode=prefer
// the driver first tries TLS, which the server refuses; that is not it).
func TestConnectRootCause(t *testing.T) {
	base, err := testkit.ServerURL()
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(base)
	if err != nil || pu.Scheme == "" {
		t.Skipf("needs a URL-form server URL: %v", err)
	}
	q := pu.Query()
	q.Del("sslmode")
	pu.RawQuery = q.Encode()
	pu.Path = "/nosuchdb"
	for _, args := range [][]string{{"queues"}, {"migrate", "status"}, {"jobs", "show", "1"}} {
		code, _, errs := millrace(t, append(args, "--database-url", pu.String())...)
		if code != 1 || !strings.HasPrefix(errs, "millrace "+args[0]+`: database "nosuchdb" does not exist`) ||
			strings.Count(errs, "nosuchdb\" does not exist") != 1 || strings.Contains(errs, "tls") {
			t.Errorf("millrace %s on a wrong database: exit %d, %q; want the root cause first, once", strings.Join(args, " "), code, errs)
		}
		oneLineErr(t, errs, "does not exist")
	}
	code, out, _ := millrace(t, "guard", "check", "--database-url", pu.String())
	if code != 3 || !strings.HasPrefix(out, `UNKNOWN: database "nosuchdb" does not exist`) {
		t.Errorf("guard check on a wrong database: exit %d, %q", code, out)
	}
}

// Acting on a queue or job that does not exist is an error that says
// which queues there are; a typo creates no queue. Pausing a queue ahead
// of its first job asks for --create.
func TestUnknownQueueAndJob(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)
	testkit.Enqueue(t, pool, "report", "reports", `{}`, time.Hour)
	queues := func() string {
		qs, err := ops.Queues(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, q := range qs {
			names = append(names, q.Name)
		}
		return strings.Join(names, ",")
	}
	for _, args := range [][]string{{"queue", "pause", "nosuchqueue", "--yes"}, {"queue", "resume", "nosuchqueue"}, {"jobs", "list", "--queue", "nosuchqueue"}} {
		code, out, errs := millrace(t, append(args, "--database-url", u)...)
		if code != 1 || out != "" {
			t.Errorf("millrace %s: exit %d, stdout %q; want exit 1", strings.Join(args, " "), code, out)
		}
		oneLineErr(t, errs, "no queue nosuchqueue (queues: email, reports)")
		if args[1] == "pause" && !strings.Contains(errs, "--create") {
			t.Errorf("pause of an unknown queue does not name --create: %q", errs)
		}
	}
	if got := queues(); got != "email,reports" {
		t.Fatalf("after commands on an unknown queue, the queues are %s", got)
	}
	code, out, errs := millrace(t, "queue", "pause", "early", "--yes", "--create", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "queue early: paused" {
		t.Fatalf("pause --create: exit %d %q %s", code, out, errs)
	}
	if p, _ := ops.Paused(ctx, pool, "early"); !p || queues() != "early,email,reports" {
		t.Fatalf("pause --create: paused %v, queues %s", p, queues())
	}
	code, out, _ = millrace(t, "queue", "resume", "early", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "queue early: active" {
		t.Errorf("resume of a queue paused ahead of its first job: exit %d %q", code, out)
	}

	for _, action := range []string{"cancel", "retry"} {
		code, out, errs := millrace(t, "jobs", action, "987654", "--yes", "--database-url", u)
		if code != 1 || out != "" {
			t.Errorf("jobs %s of an unknown job: exit %d, stdout %q", action, code, out)
		}
		oneLineErr(t, errs, "job 987654 does not exist")
	}

	// With many queues the error says how many and where to see them.
	for i := range fewQueues {
		testkit.Enqueue(t, pool, "x", fmt.Sprintf("q%02d", i), `{}`, 0)
	}
	_, _, errs = millrace(t, "queue", "resume", "nosuchqueue", "--database-url", u)
	oneLineErr(t, errs, fmt.Sprintf("no queue nosuchqueue (there are %d queues: millrace queues lists them)", fewQueues+3))
}

// Producer-chosen names, kinds, arguments and errors reach the terminal
// escaped: a newline forges no row, an escape sequence (a terminal title,
// a C1 CSI) does nothing.
func TestControlCharsEscaped(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	evil := "evil\nforged  9  0  0  0  0  0.00  -  no\x1b]0;title\x07"
	id := testkit.Enqueue(t, pool, "kind\x1b[2J\u009b31m", evil, `{"note":"\u009b2J\u202e"}`, 0)
	raw := []string{"\x1b", "\x07", "\u009b", "\u202e", "evil\nforged"}
	check := func(what, out string) {
		t.Helper()
		for _, r := range raw {
			if strings.Contains(out, r) {
				t.Errorf("%s prints %q raw:\n%s", what, r, out)
			}
		}
	}
	for _, args := range [][]string{{"queues"}, {"queues", "--json"}, {"jobs", "list"}, {"jobs", "list", "--json"}, {"jobs", "show", fmt.Sprint(id)},
		{"jobs", "show", "--json", fmt.Sprint(id)}, {"jobs", "list", "--queue", evil}, {"queue", "pause", evil, "--yes"}, {"queue", "resume", evil},
		{"queue", "pause", evil}, {"queue", "resume", evil + "x"}, {"jobs", "list", "--kind", "\x1b]0;t\x07"}} {
		code, out, errs := millrace(t, append(args, "--database-url", u)...)
		check(fmt.Sprintf("millrace %q (exit %d)", args, code), out+errs)
	}
	code, out, _ := millrace(t, "queues", "--database-url", u)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.Contains(lines[1], `evil\nforged`) || !strings.Contains(lines[1], `\x1b]0;title\x07`) {
		t.Errorf("queues: want the header and one row with the name escaped:\n%s", out)
	}
	code, out, _ = millrace(t, "queues", "--json", "--database-url", u)
	var raws []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &raws) != nil || len(raws) != 1 || raws[0]["name"] != evil {
		t.Errorf("queues --json: the name must decode to itself: %q", out)
	}
	code, out, _ = millrace(t, "jobs", "show", fmt.Sprint(id), "--database-url", u)
	if code != 0 || !strings.Contains(out, `kind\x1b[2J\u009b31m`) || !strings.Contains(out, `\u009b2J\u202e`) {
		t.Errorf("jobs show: want the kind and args escaped:\n%s", out)
	}
}

// blockArgs is a job that runs until its test lets it go.
type blockArgs struct{}

func (blockArgs) Kind() string { return "block" }

// napArgs is a job that runs for Millis milliseconds.
type napArgs struct {
	Millis int `json:"millis"`
}

func (napArgs) Kind() string { return "nap" }

// jobs show and jobs list as the operator reads them: a running job shows
// the attempt it runs (1 of 25, not 0) and the process working it as
// host:pid; a finished attempt's run time keeps its sub-second digits; the
// confirmation of retry and cancel says what will happen.
func TestJobsShowDetails(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	started, release := make(chan int64, 1), make(chan struct{})
	workers := mr.NewWorkers()
	mr.AddWorker(workers, mr.WorkFunc(func(ctx context.Context, j *mr.Job[blockArgs]) error {
		started <- j.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	mr.AddWorker(workers, mr.WorkFunc(func(ctx context.Context, j *mr.Job[napArgs]) error {
		time.Sleep(time.Duration(j.Args.Millis) * time.Millisecond) // the work the test measures
		return nil
	}))
	client, err := mr.NewClient(pool, mr.Config{Workers: workers,
		Queues: map[string]mr.QueueConfig{"slow": {MaxWorkers: 1}, "nap": {MaxWorkers: 1}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		client.StopAndCancel(sctx)
	}()
	defer close(release)
	nap, err := client.Insert(ctx, napArgs{Millis: 1250}, &mr.InsertOpts{Queue: "nap"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Insert(ctx, blockArgs{}, &mr.InsertOpts{Queue: "slow", MaxAttempts: 25}); err != nil {
		t.Fatal(err)
	}
	id := <-started
	host, _ := os.Hostname()
	// The job shows as running once the claim is visible.
	var out string
	for {
		var code int
		code, out, _ = millrace(t, "jobs", "show", fmt.Sprint(id), "--database-url", u)
		if code != 0 || strings.Contains(out, "running") {
			break
		}
	}
	if !regexp.MustCompile(`(?m)^attempt +1 of 25$`).MatchString(out) || !regexp.MustCompile(fmt.Sprintf(`(?m)^worked by +%s:%d$`, regexp.QuoteMeta(host), os.Getpid())).MatchString(out) {
		t.Errorf("jobs show of a running job: want attempt 1 of 25, worked by %s:%d:\n%s", host, os.Getpid(), out)
	}
	_, out, _ = millrace(t, "jobs", "list", "--queue", "slow", "--database-url", u)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Fields(lines[1])[4] != "1/25" {
		t.Errorf("jobs list of a running job: want ATTEMPT 1/25:\n%s", out)
	}

	// The nap's attempt: 1.25 s of work shows as 1.3s, not 1s.
	for {
		d, err := ops.GetJob(ctx, pool, nap.ID)
		if err != nil { // a job is live or in history, never in neither
			t.Fatal(err)
		}
		if len(d.Attempts) > 0 {
			break
		}
	}
	_, out, _ = millrace(t, "jobs", "show", fmt.Sprint(nap.ID), "--database-url", u)
	if !regexp.MustCompile(`(?m)^1 +completed .* 1\.[2-4]s\s*$`).MatchString(out) {
		t.Errorf("jobs show of a 1.25 s attempt: want TOOK 1.3s (or so):\n%s", out)
	}

	// The confirmation names the jobs it would act on and what would
	// happen (a job that does not exist is said so instead: see
	// TestJobsActionsCheckBeforeAsking).
	_, _, errs := millrace(t, "jobs", "cancel", fmt.Sprint(id), "--database-url", u)
	oneLineErr(t, errs, fmt.Sprintf("job %d will be cancelled (a running one is told to stop): pass --yes to confirm", id))
	d1 := clientkit.Discard(t, pool, "default", "boom")
	d2 := clientkit.Discard(t, pool, "default", "boom")
	_, _, errs = millrace(t, "jobs", "retry", fmt.Sprint(d1), "--database-url", u)
	oneLineErr(t, errs, fmt.Sprintf("job %d will run again, as a new job: pass --yes to confirm", d1))
	_, _, errs = millrace(t, "jobs", "retry", fmt.Sprint(d1), fmt.Sprint(d2), "--database-url", u)
	oneLineErr(t, errs, fmt.Sprintf("jobs %d %d will run again, as new jobs: pass --yes to confirm", d1, d2))
}

func TestTook(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 412 * time.Microsecond: "412µs", 1234 * time.Microsecond: "1.23ms",
		12400 * time.Microsecond: "12ms", 1260 * time.Millisecond: "1.3s", 42 * time.Second: "42s", 192 * time.Second: "3m12s"} {
		if got := took(d); got != want {
			t.Errorf("took(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestQueueLimitCommand: queue limit sets, shows and clears a queue's
// concurrency limit; queues shows it as HELD/LIMIT; bad values and a
// queue the database does not know are refused and change nothing.
func TestQueueLimitCommand(t *testing.T) {
	pool := testkit.DB(t)
	u := pool.Config().ConnString()
	ctx := context.Background()
	testkit.Enqueue(t, pool, "email.send", "email", `{}`, 0)

	for _, bad := range [][]string{
		{"queue", "limit", "email", "--running", "3", "--clear"},
		{"queue", "limit", "email", "--running", "-1"},
		{"queue", "limit", "email", "--rate", "100"},
		{"queue", "limit", "email", "--rate", "100/1ms"},
		{"queue", "limit", "email", "--rate", "1/1s", "--clear"},
		{"queue", "limit", "email", "--running", "-3"},
		{"queue", "limit", "email", "--running", "1000001"},
		{"queue", "pause", "email", "--running", "3", "--yes"},
		{"queue", "limit", "emial", "--running", "3"},
		{"queue", "limit", "email", "--key", "c"},
		{"queue", "limit", "email", "--per-key", "2", "--key", "a,,b"},
		{"queue", "limit", "email", "--per-key", "-2"},
		{"queue", "limit", "email", "--per-key", "2", "--clear"},
		{"queue", "pause", "email", "--per-key", "2", "--yes"},
		{"queue", "limit", "email", "--key-rate", "5"},
		{"queue", "limit", "email", "--key-rate", "5/1ms"},
		{"queue", "limit", "email", "--key-rate", "0", "--key", "c"},
		{"queue", "limit", "email", "--key-rate", "5/1s", "--clear"},
	} {
		code, _, errs := millrace(t, append(bad, "--database-url", u)...)
		if code == 0 {
			t.Errorf("%q: exit 0", bad)
		}
		oneLineErr(t, errs, "")
	}
	if ls, err := ops.Limits(ctx, pool); err != nil || len(ls) != 0 {
		t.Fatalf("after refused commands: limits %+v, %v", ls, err)
	}
	code, out, errs := millrace(t, "queue", "limit", "email", "--running", "40", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "queue email: at most 40 running across every process (0 held now)" {
		t.Fatalf("queue limit --running 40: exit %d %q %s", code, out, errs)
	}
	code, out, _ = millrace(t, "queues", "--database-url", u)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[len(lines)-1]); code != 0 || f[len(f)-1] != "0/40" {
		t.Fatalf("queues after the limit:\n%s", out)
	}
	// A rate keeps the running limit.
	code, out, errs = millrace(t, "queue", "limit", "email", "--rate", "100/1s", "--database-url", u)
	if code != 0 || strings.TrimSpace(out) != "queue email: at most 40 running across every process (0 held now); at most 100 starting per 1s (0 in the current window)" {
		t.Fatalf("queue limit --rate 100/1s: exit %d %q %s", code, out, errs)
	}
	code, out, _ = millrace(t, "queue", "limit", "email", "--json", "--database-url", u)
	var got struct {
		Queue string `json:"queue"`
		Limit int    `json:"running_limit"`
		Rate  int    `json:"rate_limit"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Limit != 40 || got.Rate != 100 {
		t.Fatalf("queue limit --json: exit %d %s", code, out)
	}
	// A per-key limit keeps the others; its key is normalized.
	code, out, errs = millrace(t, "queue", "limit", "email", "--per-key", "2", "--key", "customer_id,kind", "--database-url", u)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "; at most 2 running per key args.customer_id/kind (0 keys running, 0 at the limit, 0 jobs deferred)") {
		t.Fatalf("queue limit --per-key 2: exit %d %q %s", code, out, errs)
	}
	if ls, err := ops.Limits(ctx, pool); err != nil || len(ls) != 1 || ls[0].Running != 40 || ls[0].PerKey != 2 ||
		strings.Join(ls[0].Key, ",") != "args.customer_id,kind" {
		t.Fatalf("after --per-key: limits %+v, %v", ls, err)
	}
	code, out, _ = millrace(t, "queues", "--database-url", u)
	if code != 0 || !strings.Contains(out, "2 per args.customer_id/kind: 0 keys running, 0 full, 0 deferred") {
		t.Fatalf("queues after the per-key limit:\n%s", out)
	}
	// A per-key rate keeps the per-key limit and its key.
	code, out, errs = millrace(t, "queue", "limit", "email", "--key-rate", "10/1m", "--database-url", u)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "; at most 10 starting per 1m0s per key args.customer_id/kind") {
		t.Fatalf("queue limit --key-rate 10/1m: exit %d %q %s", code, out, errs)
	}
	if ls, err := ops.Limits(ctx, pool); err != nil || len(ls) != 1 || ls[0].PerKey != 2 || ls[0].KeyRate != 10 || ls[0].KeyPer != time.Minute ||
		strings.Join(ls[0].Key, ",") != "args.customer_id,kind" {
		t.Fatalf("after --key-rate: limits %+v, %v", ls, err)
	}
	// Without the per-key limit, the rate keeps the key.
	code, out, errs = millrace(t, "queue", "limit", "email", "--per-key", "0", "--json", "--database-url", u)
	var kr struct {
		PerKey  int      `json:"per_key"`
		KeyRate int      `json:"key_rate"`
		Period  float64  `json:"key_rate_period_s"`
		Key     []string `json:"key"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &kr) != nil || kr.PerKey != 0 || kr.KeyRate != 10 || kr.Period != 60 ||
		strings.Join(kr.Key, ",") != "args.customer_id,kind" {
		t.Fatalf("queue limit --per-key 0 --json: exit %d %s %s", code, out, errs)
	}
	code, out, _ = millrace(t, "queues", "--database-url", u)
	if code != 0 || !strings.Contains(out, "10 per 1m0s per args.customer_id/kind: 0 deferred") {
		t.Fatalf("queues after the per-key rate:\n%s", out)
	}
	code, out, _ = millrace(t, "queue", "limit", "email", "--clear", "--database-url", u)
	if code != 0 || !strings.Contains(out, "no limit") {
		t.Fatalf("queue limit --clear: exit %d %q", code, out)
	}
	// Ahead of a queue's first job, with --create.
	code, out, errs = millrace(t, "queue", "limit", "later", "--running", "2", "--create", "--database-url", u)
	if code != 0 || !strings.Contains(out, "at most 2 running") {
		t.Fatalf("queue limit --create: exit %d %q %s", code, out, errs)
	}
}
