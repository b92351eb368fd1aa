package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/millrace/millrace/internal/cmdline"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/redact"
)

// The operator commands: queues, jobs, queue. They read the schema's read
// surface and call its operator functions (internal/ops); destructive
// actions ask for --yes.

func init() {
	register(&command{name: "queues", summary: "list queues: depth, rate, oldest waiting job, paused", run: runQueues})
	register(&command{name: "jobs", summary: "list, show, cancel or retry jobs (list|show|cancel|retry)", run: runJobs})
	register(&command{name: "queue", summary: "pause or resume a queue, or set its concurrency limit (pause|resume|limit NAME)", run: runQueue})
}

const opsApplicationName = "millrace-cli"

// opFlags are the flags every operator command has.
type opFlags struct {
	url  *string
	json *bool
	yes  *bool
}

func newOpFlags(fs *flag.FlagSet, destructive bool) opFlags {
	f := opFlags{
		url:  fs.String("database-url", "", "database of the queue (default $DATABASE_URL)"),
		json: fs.Bool("json", false, "print JSON instead of a table"),
	}
	if destructive {
		f.yes = fs.Bool("yes", false, "confirm a destructive action (jobs cancel, jobs retry, queue pause)")
	}
	return f
}

// printJSON writes v as indented JSON, safe for a terminal (no C1
// control character left raw; see cmdline.EscapeJSON).
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(cmdline.EscapeJSON(b), '\n'))
	return err
}

// took is how long an attempt ran, to a precision that keeps two or three
// significant digits: 412µs, 12ms, 1.3s, 42s, 3m12s.
func took(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func runQueues(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("queues", flag.ContinueOnError)
	f := newOpFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, `Usage: millrace queues [--database-url URL] [--json]

Lists every queue: jobs available, running, scheduled and discarded, the
completed and cancelled jobs still in history, completions per second over the last
minute, how long the oldest available job has waited, whether the
queue is paused, and its limits (LIMITS: for a running limit, the jobs
the live processes hold of it, claimed and not yet ended, over the limit;
for a rate limit, the jobs started in the current window over the rate;
- for none).`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	pool, err := opPool(ctx, *f.url, opsApplicationName)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := needSchema(ctx, pool); err != nil {
		return err
	}
	qs, err := ops.Queues(ctx, pool)
	if err != nil {
		return err
	}
	if *f.json {
		if qs == nil {
			qs = []ops.Queue{}
		}
		return printJSON(os.Stdout, qs)
	}
	if len(qs) == 0 {
		fmt.Println("no queue has a job")
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tAVAILABLE\tRUNNING\tSCHEDULED\tDISCARDED\tCOMPLETED\tCANCELLED\tRATE/S\tOLDEST WAITING\tPAUSED\tLIMITS")
	for _, q := range qs {
		paused := "no"
		if q.Paused {
			paused = "yes"
		}
		limit := "-"
		if q.Limit > 0 {
			limit = fmt.Sprintf("%d/%d", q.Held, q.Limit)
		}
		if q.RateLimit > 0 {
			limit = strings.TrimPrefix(limit+fmt.Sprintf(",%d/%d per %s", q.Started, q.RateLimit, q.Per), "-,")
		}
		if q.PerKey > 0 {
			limit = strings.TrimPrefix(limit+fmt.Sprintf(",%d per %s: %d keys running, %d full, %d deferred",
				q.PerKey, keyName(q.Key), q.KeysRunning, q.KeysFull, q.Deferred), "-,")
		}
		if q.KeyRate > 0 {
			limit = strings.TrimPrefix(limit+fmt.Sprintf(",%d per %s per %s", q.KeyRate, q.KeyPer, keyName(q.Key)), "-,")
			if q.PerKey == 0 {
				limit += fmt.Sprintf(": %d deferred", q.Deferred)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%s\t%s\t%s\n", cmdline.Escape(q.Name), q.Available, q.Running, q.Scheduled, q.Discarded,
			q.Completed, q.Cancelled, q.Rate, dur(q.OldestWaiting), paused, limit)
	}
	return tw.Flush()
}

func jobsUsage() {
	fmt.Fprintln(os.Stderr, `Usage:
  millrace jobs list [--queue Q] [--kind K] [--state S] [--since 1h|2006-01-02T15:04:05Z] [--limit N] [--json]
  millrace jobs show ID [--json]
  millrace jobs cancel ID... --yes
  millrace jobs retry ID... --yes

list shows one row per job, its latest state: jobs not yet finished
(available, running, scheduled) first, then finished jobs (completed,
cancelled, discarded) newest first; --state failed or snoozed lists the
jobs with such an attempt (their newest). When more jobs match than
--limit (100; 1 to 1000), a line on stderr says so. cancel stops a waiting job for good, or tells a
running job's process to cancel it; retry runs a discarded or cancelled
job again now. Every command takes --database-url (default $DATABASE_URL).`)
}

func runJobs(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	f := newOpFlags(fs, true)
	queue := fs.String("queue", "", "only jobs of this queue (list)")
	kind := fs.String("kind", "", "only jobs of this kind (list)")
	state := fs.String("state", "", "only jobs in this state (list): "+strings.Join(append(append([]string{}, ops.LiveStates...), ops.FinishedStates...), ", "))
	since := fs.String("since", "", "only jobs created (or attempts finished) since: a duration ago (1h) or a time (RFC 3339) (list)")
	limit := fs.Int("limit", 100, "at most this many jobs (list; 1 to 1000)")
	fs.Usage = func() { jobsUsage(); fs.PrintDefaults() }
	all, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(all) < 1 {
		jobsUsage()
		return errors.New("missing action: list, show, cancel or retry")
	}
	action, pos := all[0], all[1:]
	switch action {
	case "list", "show", "cancel", "retry":
	case "help":
		jobsUsage()
		return flag.ErrHelp
	default:
		return unknownCommand(action, []string{"list", "show", "cancel", "retry"})
	}
	var ids []int64
	switch action {
	case "list":
		if len(pos) > 0 {
			return fmt.Errorf("unexpected argument %q", pos[0])
		}
		if *limit < 1 || *limit > ops.MaxLimit {
			return fmt.Errorf("--limit %d: want 1 to %d", *limit, ops.MaxLimit)
		}
		if !ops.ValidState(*state) {
			return fmt.Errorf("unknown state %q: want one of %s", *state, strings.Join(append(append([]string{}, ops.LiveStates...), ops.FinishedStates...), ", "))
		}
	default:
		if len(pos) == 0 {
			return fmt.Errorf("jobs %s needs a job id", action)
		}
		if action == "show" && len(pos) > 1 {
			return fmt.Errorf("unexpected argument %q", pos[1])
		}
		for _, p := range pos {
			id, err := strconv.ParseInt(p, 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("job id %q is not a positive number", p)
			}
			ids = append(ids, id)
		}
	}
	filter := ops.Filter{Queue: *queue, Kind: *kind, State: *state, Limit: *limit}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return err
		}
		filter.Since = t
	}
	pool, err := opPool(ctx, *f.url, opsApplicationName)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := needSchema(ctx, pool); err != nil {
		return err
	}
	switch action {
	case "list":
		if *queue != "" {
			if err := checkQueue(ctx, pool, *queue, ""); err != nil {
				return err
			}
		}
		jobs, more, err := ops.LatestJobs(ctx, pool, filter)
		if err != nil {
			return err
		}
		if more {
			// On stderr: stdout stays the table, or JSON a program reads.
			defer fmt.Fprintln(os.Stderr, moreJobs(len(jobs)))
		}
		for i := range jobs {
			jobs[i] = redactJob(jobs[i])
		}
		if *f.json {
			if jobs == nil {
				jobs = []ops.Job{}
			}
			return printJSON(os.Stdout, jobs)
		}
		if len(jobs) == 0 {
			fmt.Println("no job matches")
			return nil
		}
		printJobs(os.Stdout, jobs)
		return nil
	case "show":
		d, err := ops.GetJob(ctx, pool, ids[0])
		if errors.Is(err, ops.ErrNotFound) {
			return fmt.Errorf("job %d: %w", ids[0], err)
		}
		if err != nil {
			return err
		}
		if d.Live != nil {
			live := redactJob(*d.Live)
			d.Live = &live
		}
		for i := range d.Attempts {
			d.Attempts[i] = redactJob(d.Attempts[i])
		}
		if *f.json {
			return printJSON(os.Stdout, d)
		}
		var procs map[int]ops.Process
		if d.Live != nil && d.Live.Owner != nil {
			// host:pid when the role may read millrace.process; else the id.
			procs, _ = ops.Processes(ctx, pool, []int{*d.Live.Owner})
		}
		printJob(os.Stdout, d, procs)
		return nil
	}
	// cancel, retry: each job is looked at first, and --yes asked for
	// only when something would be done, saying what. A standby would
	// refuse the write whatever the jobs: that is said first.
	if err := needPrimary(ctx, pool); err != nil {
		return err
	}
	var todo, skipped []int64
	var why []string // why each skipped job would be left as it is
	for _, id := range ids {
		d, err := ops.GetJob(ctx, pool, id)
		if err != nil && !errors.Is(err, ops.ErrNotFound) {
			return fmt.Errorf("job %d: %w", id, err)
		}
		if reason := wontAct(action, id, d, err); reason != "" {
			skipped, why = append(skipped, id), append(why, reason)
			continue
		}
		todo = append(todo, id)
	}
	if len(todo) == 0 {
		if len(ids) == 1 {
			return errors.New(why[0])
		}
		return fmt.Errorf("nothing done: %s", strings.Join(why, "; "))
	}
	if !*f.yes {
		what := map[string]string{"cancel": "will be cancelled (a running one is told to stop)", "retry": "will run again, as " + plural(len(todo), "a new job", "new jobs")}[action]
		msg := fmt.Sprintf("%s %s %s: pass --yes to confirm", plural(len(todo), "job", "jobs"), joinIDs(todo), what)
		if len(skipped) > 0 {
			msg += " (left as they are: " + strings.Join(why, "; ") + ")"
		}
		return errors.New(msg)
	}
	// Each outcome is said once: on stdout when it is what was asked
	// for, else in the one error line.
	for _, id := range todo {
		var out string
		var retried int64
		var err error
		if action == "cancel" {
			out, err = ops.Cancel(ctx, pool, id)
		} else {
			retried, out, err = ops.Retry(ctx, pool, id)
		}
		if err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		if (action == "cancel" && (out == "cancelled" || out == "cancelling")) || retried != 0 {
			fmt.Printf("job %d: %s\n", id, out)
			continue
		}
		// The job changed between the look and the action.
		why = append(why, outcomeLine(action, id, out))
	}
	switch {
	case len(why) == 1 && len(ids) == 1:
		return errors.New(why[0])
	case len(why) > 0:
		past := map[string]string{"cancel": "cancelled", "retry": "retried"}[action]
		return fmt.Errorf("%d of %d jobs not %s: %s", len(why), len(ids), past, strings.Join(why, "; "))
	}
	return nil
}

// wontAct says in one line why action (cancel or retry) would leave the
// job as it is, as the job's look d (err: ops.ErrNotFound or nil) shows
// it; "" when it would act.
func wontAct(action string, id int64, d ops.JobDetail, err error) string {
	if err != nil || d.Latest() == nil {
		return outcomeLine(action, id, "unknown")
	}
	state := d.Latest().State
	if action == "cancel" {
		if d.Live != nil {
			return ""
		}
		return fmt.Sprintf("job %d has finished (%s): nothing to cancel", id, state)
	}
	switch {
	case d.Live != nil:
		return outcomeLine(action, id, "not finished")
	case state == "completed":
		return outcomeLine(action, id, "completed")
	case state == "discarded" || state == "cancelled":
		return ""
	}
	return fmt.Sprintf("job %d is %s: retry runs again only a discarded or cancelled job (nothing done)", id, state)
}

// outcomeLine is, in one line, what an outcome of ops.Cancel or
// ops.Retry that did nothing means.
func outcomeLine(action string, id int64, out string) string {
	switch out {
	case "unknown":
		return fmt.Sprintf("job %d does not exist (not waiting, not running, not in history): nothing done", id)
	case "finished":
		return fmt.Sprintf("job %d has finished: nothing to cancel", id)
	case "not finished":
		return fmt.Sprintf("job %d has not finished: retry runs again only a discarded or cancelled job (nothing done)", id)
	case "completed":
		return fmt.Sprintf("job %d completed: retry runs again only a discarded or cancelled job (nothing done)", id)
	}
	return fmt.Sprintf("job %d: %s (nothing done)", id, out)
}

// moreJobs is the line jobs list prints when more jobs match than it
// shows: it never cuts a list silently.
func moreJobs(shown int) string {
	how := "narrow the list with --queue, --kind, --state or --since"
	if shown < ops.MaxLimit {
		how += fmt.Sprintf(", or raise --limit (at most %d)", ops.MaxLimit)
	}
	return fmt.Sprintf("more jobs match than the %d shown: %s", shown, how)
}

// redactJob is a job or attempt as every command shows it: its arguments
// and error masked by the rule the dashboard applies (package redact), in
// the table and in JSON alike.
func redactJob(j ops.Job) ops.Job {
	j.Args = redact.JSON(j.Args)
	j.Error = redact.String(j.Error)
	return j
}

// fewQueues is how many queue names an error lists; with more it says how
// many there are and where to see them.
const fewQueues = 10

// checkQueue returns nil when name is a queue the database knows (it has
// jobs, history, or a pause or resume of its own), else an error that
// says which queues there are.
func checkQueue(ctx context.Context, db ops.DB, name, hint string) error {
	qs, err := ops.Queues(ctx, db)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		if q.Name == name {
			return nil
		}
		names = append(names, cmdline.Escape(q.Name))
	}
	have := "no queue has a job yet"
	switch {
	case len(names) > fewQueues:
		have = fmt.Sprintf("there are %d queues: millrace queues lists them", len(names))
	case len(names) > 0:
		have = "queues: " + strings.Join(names, ", ")
	}
	msg := fmt.Sprintf("no queue %s (%s)", cmdline.Escape(name), have)
	if hint != "" {
		msg += "; " + hint
	}
	return errors.New(msg)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, " ")
}

// parseSince reads "1h" (that long before now) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			d = -d
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (90m, 2h) or a time (2006-01-02T15:04:05Z)", s)
}

// oneLineText is s on one line, control characters escaped, cut to n
// characters.
func oneLineText(s string, n int) string {
	r := []rune(cmdline.Escape(strings.Join(strings.Fields(s), " ")))
	if len(r) > n {
		r = append(r[:n-1], '…')
	}
	return string(r)
}

func printJobs(w io.Writer, jobs []ops.Job) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tATTEMPT\tCREATED\tRUN AT / FINISHED\tERROR")
	for _, j := range jobs {
		when := ""
		switch {
		case j.FinishedAt != nil:
			when = j.FinishedAt.Local().Format(time.DateTime)
		case j.RunAt != nil:
			when = j.RunAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, cmdline.Escape(j.Queue), cmdline.Escape(j.Kind), j.RunningAttempt(), j.MaxAttempts,
			j.CreatedAt.Local().Format(time.DateTime), when, oneLineText(j.Error, 60))
	}
	tw.Flush()
}

// printJob prints a job and its attempts; procs names the processes
// (host:pid) that the role may read.
func printJob(w io.Writer, d ops.JobDetail, procs map[int]ops.Process) {
	j := d.Latest()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%d\n", d.ID)
	fmt.Fprintf(tw, "state\t%s\n", j.State)
	fmt.Fprintf(tw, "queue\t%s\n", cmdline.Escape(j.Queue))
	fmt.Fprintf(tw, "kind\t%s\n", cmdline.Escape(j.Kind))
	fmt.Fprintf(tw, "priority\t%d\n", j.Priority)
	fmt.Fprintf(tw, "attempt\t%d of %d\n", j.RunningAttempt(), j.MaxAttempts)
	fmt.Fprintf(tw, "created\t%s\n", j.CreatedAt.Local().Format(time.RFC3339Nano))
	if d.Live != nil && d.Live.RunAt != nil {
		fmt.Fprintf(tw, "run at\t%s\n", d.Live.RunAt.Local().Format(time.RFC3339Nano))
	}
	if d.Live != nil && d.Live.Owner != nil {
		if p, ok := procs[*d.Live.Owner]; ok {
			fmt.Fprintf(tw, "worked by\t%s\n", cmdline.Escape(redact.String(p.String())))
		} else {
			fmt.Fprintf(tw, "worked by\tprocess %d\n", *d.Live.Owner)
		}
	}
	if args := d.Args(); len(args) > 0 {
		fmt.Fprintf(tw, "args\t%s\n", cmdline.Escape(string(args)))
	} else {
		fmt.Fprintf(tw, "args\t(%s)\n", ops.ArgsNotKept)
	}
	tw.Flush()
	if len(d.Attempts) == 0 {
		fmt.Fprintln(w, "\nno attempt has finished yet")
		return
	}
	fmt.Fprintln(w, "\nattempts:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tOUTCOME\tSTARTED\tFINISHED\tTOOK\tERROR")
	for _, a := range d.Attempts {
		started, finished := "", ""
		if a.StartedAt != nil {
			started = a.StartedAt.Local().Format("2006-01-02 15:04:05.000")
		}
		if a.FinishedAt != nil {
			finished = a.FinishedAt.Local().Format("2006-01-02 15:04:05.000")
		}
		ran := "-"
		if a.StartedAt != nil && a.FinishedAt != nil {
			ran = took(a.Duration())
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.State, started, finished, ran, oneLineText(a.Error, 200))
	}
	tw.Flush()
}

func queueUsage() {
	fmt.Fprintln(os.Stderr, `Usage:
  millrace queue pause NAME --yes [--create]   stop handing out the queue's jobs (those running finish)
  millrace queue resume NAME                   hand them out again
  millrace queue limit NAME [--running N] [--rate N/PERIOD] [--per-key N] [--key-rate N/PERIOD] [--key K] [--clear] [--create]
                                               at most N of its jobs running at once, or
                                               starting per PERIOD (100/1s, 60/1m), or
                                               running at once per key, or starting per
                                               PERIOD per key, across every process
                                               (no flag: show the limits)

NAME must be a queue the database knows (millrace queues lists them);
--create pauses a queue, or limits it, ahead of its first job. queue limit
changes the limits it is given and keeps the others (--running 0, --rate
0, --per-key 0 or --key-rate 0 removes one, --clear all); a limit takes
effect at each process's next claim, and running jobs finish. A job's key
(for --per-key and --key-rate) is --key's parts, comma-separated: kind
(the job's kind) or a top-level args field (customer_id, or
args.customer_id); a key stays until another is given, and is the kind
when none ever was. Jobs of a key at its limit or rate wait in the
schedule (jobs show: scheduled), and other keys' jobs go on. Every action takes --database-url
(default $DATABASE_URL).`)
}

func runQueue(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("queue", flag.ContinueOnError)
	f := newOpFlags(fs, true)
	create := fs.Bool("create", false, "queue pause, queue limit: act on a queue that has no job yet, ahead of its first job")
	running := fs.Int("running", 0, "queue limit: at most this many of the queue's jobs running at once across every process (1 to 1000000; 0: none)")
	rate := fs.String("rate", "", "queue limit: at most N of the queue's jobs starting per PERIOD across every process, as N/PERIOD (100/1s; 0: none)")
	perKey := fs.Int("per-key", 0, "queue limit: at most this many of the queue's jobs of one key running at once across every process (1 to 1000000; 0: none)")
	keyRate := fs.String("key-rate", "", "queue limit: at most N of the queue's jobs of one key starting per PERIOD across every process, as N/PERIOD (100/1s; 0: none)")
	key := fs.String("key", "", "queue limit: a job's key for --per-key and --key-rate, comma-separated parts: kind, or a top-level args field (default: kind)")
	clearLimit := fs.Bool("clear", false, "queue limit: remove the queue's limits")
	fs.Usage = func() { queueUsage(); fs.PrintDefaults() }
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		queueUsage()
		return errors.New("missing action: pause, resume or limit")
	}
	action := pos[0]
	switch action {
	case "pause", "resume", "limit":
	case "help":
		queueUsage()
		return flag.ErrHelp
	default:
		return unknownCommand(action, []string{"pause", "resume", "limit"})
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if action != "limit" && (given["running"] || given["rate"] || given["per-key"] || given["key-rate"] || given["key"] || given["clear"]) {
		return errors.New("--running, --rate, --per-key, --key-rate, --key and --clear belong to queue limit")
	}
	if action == "limit" && *clearLimit && (given["running"] || given["rate"] || given["per-key"] || given["key-rate"] || given["key"]) {
		return errors.New("queue limit: give --running, --rate, --per-key or --key-rate, or --clear, not both")
	}
	if action == "limit" && (*running < 0 || *running > 1000000) {
		return fmt.Errorf("queue limit: --running %d: want 1 to 1000000 (0: none)", *running)
	}
	if action == "limit" && (*perKey < 0 || *perKey > 1000000) {
		return fmt.Errorf("queue limit: --per-key %d: want 1 to 1000000 (0: none)", *perKey)
	}
	var keyRateN int
	var keyRatePer time.Duration
	if action == "limit" && given["key-rate"] {
		if keyRateN, keyRatePer, err = ops.ParseRate(*keyRate); err != nil {
			return fmt.Errorf("queue limit: --key-%w", err)
		}
	}
	if action == "limit" && given["key"] && (!given["per-key"] || *perKey == 0) && (!given["key-rate"] || keyRateN == 0) {
		return errors.New("queue limit: --key goes with --per-key N or --key-rate N/PERIOD")
	}
	var keyParts []string
	if given["key"] {
		if keyParts, err = ops.ParseKey(*key); err != nil {
			return fmt.Errorf("queue limit: --key %q: %w", *key, err)
		}
	}
	var rateN int
	var ratePer time.Duration
	if action == "limit" && given["rate"] {
		if rateN, ratePer, err = ops.ParseRate(*rate); err != nil {
			return fmt.Errorf("queue limit: --%w", err)
		}
	}
	pos = pos[1:]
	if len(pos) != 1 {
		if len(pos) == 0 {
			return fmt.Errorf("queue %s needs a queue name", action)
		}
		return fmt.Errorf("unexpected argument %q", pos[1])
	}
	name := pos[0]
	pool, err := opPool(ctx, *f.url, opsApplicationName)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := needSchema(ctx, pool); err != nil {
		return err
	}
	if err := needPrimary(ctx, pool); err != nil {
		return err
	}
	// A typo must not create a queue: acting on a queue the database does
	// not know is an error, but for pausing one ahead of its first job,
	// asked for with --create.
	if !((action == "pause" || action == "limit") && *create) {
		hint := ""
		switch action {
		case "pause":
			hint = "pass --create to pause it ahead of its first job"
		case "limit":
			hint = "pass --create to limit it ahead of its first job"
		}
		if err := checkQueue(ctx, pool, name, hint); err != nil {
			return err
		}
	}
	// Asked once the queue is known to be there (or --create said to
	// make it).
	if action == "limit" {
		return queueLimit(ctx, pool, name, limitChange{running: *running, rate: rateN, per: ratePer, perKey: *perKey, key: keyParts,
			keyRate: keyRateN, keyPer: keyRatePer, setRunning: given["running"], setRate: given["rate"], setPerKey: given["per-key"],
			setKeyRate: given["key-rate"], setKey: given["key"], clear: *clearLimit}, *f.json)
	}
	if action == "pause" && !*f.yes {
		return fmt.Errorf("queue pause %s stops every worker from taking its jobs until it is resumed: pass --yes to confirm", cmdline.Escape(name))
	}
	if action == "pause" {
		err = ops.Pause(ctx, pool, name)
	} else {
		err = ops.Resume(ctx, pool, name)
	}
	if err != nil {
		return err
	}
	paused, err := ops.Paused(ctx, pool, name)
	if err != nil {
		return err
	}
	state := "active"
	if paused {
		state = "paused"
	}
	if *f.json {
		return printJSON(os.Stdout, map[string]any{"queue": name, "paused": paused})
	}
	fmt.Printf("queue %s: %s\n", cmdline.Escape(name), state)
	return nil
}

// limitChange is what queue limit was asked to change.
type limitChange struct {
	running, rate, perKey, keyRate                     int
	per, keyPer                                        time.Duration
	key                                                []string
	setRunning, setRate, setPerKey, setKeyRate, setKey bool
	clear                                              bool
}

// keyName says a per-key limit's key: its parts joined by /.
func keyName(key []string) string {
	if len(key) == 0 {
		return "kind"
	}
	return strings.Join(key, "/")
}

// queueLimit changes queue's limits as asked (none: it shows them), and
// prints them.
func queueLimit(ctx context.Context, db ops.DB, name string, ch limitChange, asJSON bool) error {
	current := func() (ops.QueueLimit, error) {
		ls, err := ops.Limits(ctx, db)
		for _, l := range ls {
			if l.Queue == name {
				return l, err
			}
		}
		return ops.QueueLimit{Queue: name}, err
	}
	if ch.setRunning || ch.setRate || ch.setPerKey || ch.setKeyRate || ch.clear {
		cur, err := current()
		if err != nil {
			return err
		}
		l := cur.Limit
		if ch.setRunning {
			l.Running = ch.running
		}
		if ch.setRate {
			l.Rate, l.Per = ch.rate, ch.per
		}
		if ch.setPerKey {
			l.PerKey = ch.perKey
		}
		if ch.setKeyRate {
			l.KeyRate, l.KeyPer = ch.keyRate, ch.keyPer
		}
		if ch.setKey {
			// Both per-key limits are keyed by it; without --key the
			// key stays (the kind for a queue that had none).
			l.Key = ch.key
		}
		if l.PerKey == 0 && l.KeyRate == 0 {
			l.Key = nil
		}
		if ch.clear {
			l = ops.Limit{}
		}
		if err := ops.SetLimit(ctx, db, name, l); err != nil {
			return err
		}
	}
	cur, err := current()
	if err != nil {
		return err
	}
	var top []ops.KeyCount
	if cur.PerKey > 0 || cur.KeyRate > 0 {
		if top, err = ops.KeyLimits(ctx, db, name, 10); err != nil {
			return err
		}
	}
	if asJSON {
		keys := make([]map[string]any, len(top))
		for i, k := range top {
			keys[i] = map[string]any{"key": k.Key, "running": k.Running}
			if k.Started >= 0 {
				keys[i]["started"] = k.Started
			}
		}
		return printJSON(os.Stdout, map[string]any{"queue": name, "running_limit": cur.Running, "held": cur.Held,
			"rate_limit": cur.Rate, "rate_period_s": cur.Per.Seconds(), "started": cur.Started,
			"per_key": cur.PerKey, "key": cur.Key, "keys_running": cur.KeysRunning, "keys_full": cur.KeysFull,
			"key_rate": cur.KeyRate, "key_rate_period_s": cur.KeyPer.Seconds(), "deferred": cur.Deferred, "top_keys": keys})
	}
	fmt.Printf("queue %s: %s\n", cmdline.Escape(name), describeLimits(cur))
	for _, k := range top {
		if k.Started >= 0 {
			fmt.Printf("  key %s: %d running, %d started in the window\n", cmdline.Escape(k.Key), k.Running, k.Started)
		} else {
			fmt.Printf("  key %s: %d running\n", cmdline.Escape(k.Key), k.Running)
		}
	}
	return nil
}

// describeLimits says a queue's limits in words.
func describeLimits(l ops.QueueLimit) string {
	var parts []string
	if l.Running > 0 {
		parts = append(parts, fmt.Sprintf("at most %d running across every process (%d held now)", l.Running, l.Held))
	}
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("at most %d starting per %s (%d in the current window)", l.Rate, l.Per, l.Started))
	}
	if l.PerKey > 0 {
		parts = append(parts, fmt.Sprintf("at most %d running per key %s (%d keys running, %d at the limit, %d jobs deferred)",
			l.PerKey, keyName(l.Key), l.KeysRunning, l.KeysFull, l.Deferred))
	}
	if l.KeyRate > 0 {
		deferred := ""
		if l.PerKey == 0 {
			deferred = fmt.Sprintf(" (%d jobs deferred)", l.Deferred)
		}
		parts = append(parts, fmt.Sprintf("at most %d starting per %s per key %s%s", l.KeyRate, l.KeyPer, keyName(l.Key), deferred))
	}
	if len(parts) == 0 {
		return "no limit (each process runs up to its workers)"
	}
	return strings.Join(parts, "; ")
}
