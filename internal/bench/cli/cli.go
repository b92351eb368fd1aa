// Package cli is `millrace bench`: flags, the embedded cluster, the run and
// the report. It is shared by the millrace binary and by the River bench
// program (bench/river), which adds one strategy to the same command.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/bench"
	_ "github.com/millrace/millrace/internal/bench/classic" // que, skiplocked, skiplocked-batch, skiplocked-lifo, cursor
	_ "github.com/millrace/millrace/internal/bench/native"  // millrace
	"github.com/millrace/millrace/internal/bench/report"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/millrace/millrace/millracetest/pgcluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The defaults make `millrace bench` with no flags a comparison of about
// five minutes on a 2-core machine that shows the collapse: three
// strategies through the idle-xid scenario at a rate where a pinned
// horizon takes the classic queues down within the stress phase.
const (
	defaultStrategies = "skiplocked,que,millrace"
	defaultScenario   = bench.ScenarioIdleXid
	defaultRate       = "800"
	defaultWork       = 10 * time.Millisecond
	defaultWarmup     = 5 * time.Second
	defaultClean      = 20 * time.Second
	defaultStress     = 45 * time.Second
	defaultRecovery   = 20 * time.Second
)

// Error is a failed bench run with the exit status it calls for.
type Error struct {
	Msg  string
	Code int
}

func (e *Error) Error() string { return e.Msg }

// ExitCode is the process exit status for this error.
func (e *Error) ExitCode() int { return e.Code }

// redactedError is an error of Bench with its passwords redacted; it
// keeps the error it wraps (errors.As finds an *Error and the driver's
// errors) and its exit status.
type redactedError struct{ err error }

func (r *redactedError) Error() string { return cmdline.Redact(r.err.Error()) }
func (r *redactedError) Unwrap() error { return r.err }

// ExitCode is the wrapped *Error's exit status, else 1.
func (r *redactedError) ExitCode() int {
	var e *Error
	if errors.As(r.err, &e) {
		return e.Code
	}
	return 1
}

// Bench runs `millrace bench` with args (the flags after "bench"). No
// error it returns shows a password.
func Bench(ctx context.Context, args []string) (err error) {
	// A worker process of the chaos scenario runs as this executable's
	// "bench" command: it never returns from here.
	bench.ChildMain()
	defer func() {
		if err != nil {
			err = &redactedError{err}
		}
	}()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	strategies := fs.String("strategies", defaultStrategies, "comma-separated strategies: "+strings.Join(append(bench.Names(), "river"), ", "))
	scenario := fs.String("scenario", defaultScenario, "scenario: "+scenarioList())
	rate := fs.String("rate", defaultRate, "jobs offered per second, or max (as fast as each strategy keeps up)")
	jobs := fs.Int64("jobs", 0, "jobs to insert first and work down (burndown scenario)")
	workers := fs.Int("workers", 0, fmt.Sprintf("concurrent workers per strategy, over all processes (default %d; millrace and river: %d, as River's own benchmark)", bench.DefaultWorkers, bench.GoroutineWorkers))
	processes := fs.Int("processes", 1, "run each strategy's workers as N independent clients (own pools and listeners), the workers split between them")
	work := fs.Duration("work", defaultWork, "time each job's work takes")
	warmup := fs.Duration("warmup", defaultWarmup, "warm-up phase (not in the summary)")
	clean := fs.Duration("clean", defaultClean, "clean phase")
	stress := fs.Duration("stress", defaultStress, "stress phase: the scenario pins the horizon")
	recovery := fs.Duration("recovery", defaultRecovery, "recovery phase: the pin is released")
	dbURL := fs.String("database-url", "", "server to run on (default $DATABASE_URL; empty: a throwaway cluster from the local PostgreSQL binaries)")
	standbyURL := fs.String("standby-url", "", "a hot standby (hot_standby_feedback=on) of --database-url, for the standby scenario")
	out := fs.String("out", "", "report directory (default bench-results/SCENARIO-TIME)")
	policy := fs.String("guard", "", "run millrace guard with this policy file during the run")
	metricsListen := fs.String("metrics-listen", "", "serve the Prometheus metrics of the millrace strategy's clients (package millraceprom) on ADDR/metrics during the run, e.g. 127.0.0.1:9464; summary.json then records their totals next to the bench's counts")
	metricsLinger := fs.Duration("metrics-linger", 0, "with --metrics-listen, keep serving /metrics this long after the run, for a last scrape of the final counts")
	mixFlag := fs.String("mix", "", "percentages of offered jobs that fail once, snooze once, are cancelled while queued, are scheduled 1-30s ahead,\nor duplicate an earlier unique job, e.g. fail=20,snooze=5,cancel=5,sched=20,unique=10 (millrace and river; with --rate N or max, not burndown)")
	var pgSettings []string
	fs.Func("pg-setting", "NAME=VALUE: a server setting the bench's database runs with (ALTER DATABASE ... SET, for every session in it but\nthe bench's sampler), e.g. default_transaction_isolation='repeatable read' or idle_session_timeout=5s; repeatable", func(v string) error {
		name, value, ok := strings.Cut(v, "=")
		if !ok || !settingName.MatchString(name) {
			return fmt.Errorf("want NAME=VALUE, e.g. statement_timeout=1s")
		}
		pgSettings = append(pgSettings, name+"="+strings.Trim(value, "'"))
		return nil
	})
	// --limit is repeatable: its parts add up (--limit running=40 --limit
	// per-key=2 is --limit running=40,per-key=2); one given twice is an
	// error. A second flag that replaced the first ran a bench without
	// its running limit and reported 483 running at once.
	var limitParts []string
	fs.Func("limit", "limits on the strategy's queue across every process (millrace), comma-separated or repeated: running=N, rate=N/PERIOD,\n"+
		"per-key=N and key-rate=N/PERIOD (per key: key=ARG, the args field, default customer_id; keys=K, the producer's keys, default 1000;\n"+
		"hot=N, a backlog of N jobs of one more key inserted before the run);\nsummary.json's most_running, most_started, most_running_per_key and most_started_per_key are the most jobs\n"+
		"the bench saw running at once, and starting in any PERIOD, in all and of one key", func(v string) error {
		limitParts = append(limitParts, v)
		return nil
	})
	pooler := fs.String("pooler", "", "run the strategies' connections through a connection pooler the bench starts: pgbouncer-transaction\n(PgBouncer in transaction mode; millrace's session connection goes to the server directly; millrace only)")
	watchQueues := fs.Duration("watch-queues", 0, "read the queues as the dashboard's queues page does (every queue's counts, oldest waiting job and rate;\nthe last second's activity), at this interval, on a connection of the bench's own while millrace runs: what looking costs (0: off)")
	readers := fs.Int("readers", bench.DefaultReaders, "analytics scenario: reader sessions running reports")
	readerDuration := fs.Duration("reader-duration", bench.DefaultReaderDuration, "analytics scenario: how long one report reads in its REPEATABLE READ transaction (default at most the stress phase)")
	readerInterval := fs.Duration("reader-interval", 0, "analytics scenario: time between report starts (default reader-duration/readers: the readers always overlap)")
	readerReadOnly := fs.Bool("reader-readonly", false, "analytics scenario: READ ONLY reports that never take a transaction id (default: each report takes one, SELECT pg_current_xact_id(), as a report that writes does)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: millrace bench [flags]\n\nRuns strategies one after another through a scenario on one Postgres and writes\ntimeseries.jsonl, summary.json, PNG charts and report.html.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := cmdline.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &Error{Msg: err.Error(), Code: 2}
	}
	// The default is $DATABASE_URL, filled in only now: -h never prints it.
	cmdline.FromEnv(fs, map[string]string{"database-url": "DATABASE_URL"})
	if len(pos) > 0 {
		return &Error{Msg: fmt.Sprintf("unexpected argument %q", pos[0]), Code: 2}
	}
	an, err := analyticsFlags(fs, *scenario, *readers, *readerDuration, *readerInterval, *readerReadOnly)
	if err != nil {
		return &Error{Msg: err.Error(), Code: 2}
	}
	cfg := bench.Config{Scenario: *scenario, Jobs: *jobs, Workers: *workers, Processes: *processes, Work: *work,
		Warmup: *warmup, Clean: *clean, Stress: *stress, Recovery: *recovery, StandbyURL: *standbyURL, Analytics: an,
		WatchQueues: *watchQueues}
	mix, err := bench.ParseMix(*mixFlag)
	if err != nil {
		return &Error{Msg: err.Error(), Code: 2}
	}
	cfg.Mix = mix
	if cfg.Limit, err = bench.ParseLimit(strings.Join(limitParts, ",")); err != nil {
		return &Error{Msg: err.Error(), Code: 2}
	}
	if *rate != "max" {
		r, err := strconv.ParseFloat(*rate, 64)
		if err != nil || r <= 0 {
			return &Error{Msg: fmt.Sprintf("--rate %q: want a positive number of jobs per second, or max", *rate), Code: 2}
		}
		cfg.Rate = r
	}
	for _, s := range strings.Split(*strategies, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Strategies = append(cfg.Strategies, s)
		}
	}
	if _, ok := bench.Scenarios[cfg.Scenario]; !ok {
		return &Error{Msg: fmt.Sprintf("unknown scenario %q (have: %s)", cfg.Scenario, scenarioList()), Code: 2}
	}
	var missing []string
	for _, s := range cfg.Strategies {
		if _, err := bench.Lookup(s); err != nil {
			missing = append(missing, s)
		}
	}
	if len(missing) == 1 && missing[0] == "river" {
		return runRiver(ctx, args)
	}
	if len(missing) > 0 {
		return &Error{Msg: fmt.Sprintf("unknown strategy %q (have: %s)", missing[0], strings.Join(append(bench.Names(), "river"), ", ")), Code: 2}
	}
	if cfg.Scenario == bench.ScenarioBurndown && cfg.Jobs < 1 {
		return &Error{Msg: "the burndown scenario needs --jobs N", Code: 2}
	}
	if *workers < 0 || (*workers == 0 && workersGiven(fs)) {
		return &Error{Msg: fmt.Sprintf("--workers %d: want at least 1", *workers), Code: 2}
	}
	if *processes < 1 {
		return &Error{Msg: fmt.Sprintf("--processes %d: want at least 1", *processes), Code: 2}
	}
	if err := cfg.Check(); err != nil {
		return &Error{Msg: err.Error(), Code: 2}
	}
	switch *pooler {
	case "":
	case poolerPgBouncer:
		for _, s := range cfg.Strategies {
			if s != "millrace" {
				return &Error{Msg: fmt.Sprintf("--pooler %s runs the millrace strategy only, not %s", *pooler, s), Code: 2}
			}
		}
		if _, err := pgcluster.PgBouncerBin(); err != nil {
			return &Error{Msg: "--pooler: " + err.Error(), Code: 2}
		}
	default:
		return &Error{Msg: fmt.Sprintf("--pooler %q: want %s", *pooler, poolerPgBouncer), Code: 2}
	}
	cfg.Pooler, cfg.PGSettings = *pooler, pgSettings
	var pol *guard.Policy
	if *policy != "" {
		p, err := guard.LoadPolicy(*policy)
		if err != nil {
			return &Error{Msg: err.Error(), Code: 2}
		}
		pol = p
	}
	cfg.Out = *out
	if cfg.Out == "" {
		cfg.Out = filepath.Join("bench-results", cfg.Scenario+"-"+time.Now().Format("20060102-150405"))
	}
	cfg.Progress = os.Stdout
	cfg.TTY = isTerminal(os.Stdout)

	// The server: the given one, or a throwaway cluster torn down on return
	// (also on Ctrl-C: the context is cancelled and the run unwinds).
	if *dbURL != "" {
		if cfg.Scenario == bench.ScenarioStandby && cfg.StandbyURL == "" {
			return &Error{Msg: "the standby scenario on --database-url (or DATABASE_URL) needs --standby-url: a hot standby of that server with hot_standby_feedback=on", Code: 2}
		}
		// A database of the bench's own, dropped on return (also on
		// Ctrl-C): the given database is never touched.
		db, err := createBenchDatabase(ctx, *dbURL)
		if err != nil {
			return err
		}
		defer func() {
			if err := db.drop(); err != nil {
				fmt.Fprintln(os.Stderr, "warning:", cmdline.Redact(err.Error()))
			}
		}()
		fmt.Printf("working in %s, created for this run and dropped at its end\n", db.where())
		cfg.URL = db.url
		if cfg.StandbyURL != "" {
			cfg.StandbyURL = pgcluster.WithDatabase(cfg.StandbyURL, db.name)
		}
		if ctx.Err() != nil {
			return &Error{Msg: "interrupted", Code: 130}
		}
	} else {
		bin, err := pgcluster.BinDir() // fetches a build first where MILLRACE_PG asks for one the machine lacks
		if err != nil {
			return err
		}
		fmt.Printf("starting a throwaway PostgreSQL cluster from %s ...\n", bin)
		c, err := pgcluster.Start(ctx, pgcluster.Options{})
		if err != nil {
			return err
		}
		defer c.Stop()
		if cfg.URL, err = c.CreateDatabase(ctx, "millrace_bench"); err != nil {
			return err
		}
		// The chaos scenario restarts this cluster once, in immediate mode.
		cfg.Restart = func(ctx context.Context) error { return c.Restart(ctx, pgcluster.Options{}) }
		if cfg.Scenario == bench.ScenarioStandby {
			fmt.Println("adding a hot standby (pg_basebackup, hot_standby_feedback=on) ...")
			sb, err := c.AddStandby(ctx, pgcluster.Options{})
			if err != nil {
				return fmt.Errorf("standby: %w", err)
			}
			defer sb.Stop()
			cfg.StandbyURL = sb.URL("millrace_bench")
		}
	}
	if len(pgSettings) > 0 {
		if err := applySettings(ctx, cfg.URL, pgSettings); err != nil {
			return err
		}
		fmt.Printf("the bench's database runs with %s\n", strings.Join(pgSettings, ", "))
	}
	if *pooler == poolerPgBouncer {
		b, err := pgcluster.StartPgBouncer(ctx, cfg.URL, pgcluster.PgBouncerOptions{PoolMode: "transaction", PoolSize: 40})
		if err != nil {
			return fmt.Errorf("--pooler: %w", err)
		}
		defer b.Stop()
		// Prepared statements are not kept across a transaction pooler's
		// server connections: describe each statement once, execute it
		// unnamed (docs/deploy.md).
		cfg.PoolerURL = withParam(b.URL(cfg.URL), "default_query_exec_mode", "cache_describe")
		fmt.Printf("the strategies' connections go through PgBouncer (transaction mode) on 127.0.0.1:%d\n", b.Port)
	}
	if pol != nil {
		pool, err := pgxpool.New(ctx, cfg.URL)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return err
		}
		glog, err := os.Create(filepath.Join(cfg.Out, "guard.log"))
		if err != nil {
			return err
		}
		defer glog.Close()
		// Every guard action, as structured JSON, next to the report.
		opts := guard.Options{Logger: slog.New(slog.NewJSONHandler(glog, nil))}
		if cfg.StandbyURL != "" {
			opts.StandbyURLs = []string{cfg.StandbyURL}
		}
		cfg.Guard = func(ctx context.Context) error { return guard.New(pool, pol, opts).Run(ctx) }
	}

	if *metricsListen != "" {
		ln, err := net.Listen("tcp", *metricsListen)
		if err != nil {
			return &Error{Msg: "--metrics-listen: " + err.Error(), Code: 2}
		}
		cfg.Metrics = prometheus.NewRegistry()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Printf("serving the millrace strategy's metrics on http://%s/metrics\n", ln.Addr())
		if *metricsLinger > 0 {
			defer func() {
				fmt.Printf("serving the final metrics on http://%s/metrics for %v\n", ln.Addr(), *metricsLinger)
				t := time.NewTimer(*metricsLinger)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}()
		}
	}

	procs := ""
	if cfg.Processes > 1 {
		procs = fmt.Sprintf(" in %d processes", cfg.Processes)
	}
	if !cfg.Mix.Zero() {
		procs += ", mix " + cfg.Mix.String()
	}
	fmt.Printf("millrace bench: %s, strategies %s, rate %s, %s%s, %v work; writing %s\n",
		cfg.Scenario, strings.Join(cfg.Strategies, ","), *rate, workersText(cfg), procs, cfg.Work, cfg.Out)
	res, runErr := bench.Run(ctx, cfg)
	if cfg.TTY {
		fmt.Print("\r\033[K")
	}
	if res != nil && len(res.Summary.Strategies) > 0 {
		fmt.Println()
		bench.WriteTable(os.Stdout, res.Summary, cfg.TTY)
		for _, name := range cfg.Strategies {
			if ss := res.Summary.Strategies[name]; ss != nil && ss.Metrics != nil && ss.Totals != nil {
				q := `{queue="default"}`
				fmt.Printf("%s metrics: inserted %.0f (bench: enqueued %d), completed %.0f (bench: %d), attempts timed %.0f\n", name,
					ss.Metrics["millrace_jobs_inserted_total"+q], ss.Totals.Enqueued,
					ss.Metrics[`millrace_job_outcomes_total{queue="default",outcome="completed"}`], ss.Totals.Completed,
					ss.Metrics["millrace_job_wait_seconds_count"+q])
			}
		}
		if err := report.Write(cfg.Out, res.Summary, res.Samples); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		fmt.Printf("\nreport: %s\n", filepath.Join(cfg.Out, "report.html"))
	}
	if left := leftovers(cfg.URL, cfg.StandbyURL); left != "" {
		fmt.Fprintln(os.Stderr, "warning:", left)
	}
	if ctx.Err() != nil {
		// Interrupted: everything the run started has been torn down.
		return &Error{Msg: "interrupted", Code: 130}
	}
	if runErr != nil {
		return runErr
	}
	if n := res.Lost(); n > 0 {
		return &Error{Msg: fmt.Sprintf("%d jobs lost", n), Code: 1}
	}
	if d := res.MixDefects(); d != "" {
		return &Error{Msg: d, Code: 1}
	}
	return nil
}

// analyticsFlags turns the reader flags into the analytics scenario's
// settings: a flag left out keeps its default (zero, resolved by the run),
// a flag given must be positive and is refused for other scenarios.
func analyticsFlags(fs *flag.FlagSet, scenario string, readers int, d, interval time.Duration, readOnly bool) (bench.Analytics, error) {
	var an bench.Analytics
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "readers", "reader-duration", "reader-interval", "reader-readonly":
			if scenario != bench.ScenarioAnalytics {
				err = fmt.Errorf("--%s applies to the %s scenario only (--scenario %s)", f.Name, bench.ScenarioAnalytics, scenario)
				return
			}
		}
		switch f.Name {
		case "readers":
			if readers < 1 {
				err = fmt.Errorf("--readers %d: want at least 1", readers)
			}
			an.Readers = readers
		case "reader-duration":
			if d <= 0 {
				err = fmt.Errorf("--reader-duration %s: want a positive duration, e.g. 30s", d)
			}
			an.Duration = d
		case "reader-interval":
			if interval <= 0 {
				err = fmt.Errorf("--reader-interval %s: want a positive duration, e.g. 10s", interval)
			}
			an.Interval = interval
		case "reader-readonly":
			an.ReadOnly = readOnly
		}
	})
	return an, err
}

// RiverWorkers is the river strategy's default worker count, River's own
// benchmark's (the strategy lives in its own module and returns it; the
// flag's help names it).
const RiverWorkers = bench.GoroutineWorkers

func workersGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "workers" })
	return given
}

// workersText says how many workers each strategy runs.
func workersText(cfg bench.Config) string {
	if cfg.Workers > 0 {
		return fmt.Sprintf("%d workers", cfg.Workers)
	}
	var parts []string
	for _, n := range cfg.Strategies {
		if w := cfg.WorkersFor(n); w > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", n, w, cfg.WorkersWhyFor(n)))
		}
	}
	return "workers " + strings.Join(parts, ", ")
}

func scenarioList() string {
	names := make([]string, 0, len(bench.Scenarios))
	for n := range bench.Scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// leftovers checks that no stress session of the bench is still connected,
// on the primary or the standby, and ends any it finds.
func leftovers(urls ...string) string {
	var found []string
	for _, u := range urls {
		if u == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			cancel()
			continue
		}
		var n int
		_ = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = ANY($1) AND datname = current_database()`,
			bench.AppNames).Scan(&n)
		conn.Close(ctx)
		cancel()
		if n > 0 {
			found = append(found, fmt.Sprintf("%d stress sessions were still connected and were terminated", n))
		}
	}
	return strings.Join(found, "; ")
}

// runRiver runs the bench through the River bench program (its own Go
// module under bench/river), built from this source checkout.
func runRiver(ctx context.Context, args []string) error {
	dir, err := riverDir()
	if err != nil {
		return &Error{Msg: "strategy \"river\" lives in its own Go module (bench/river) and needs a source checkout: " + err.Error(), Code: 2}
	}
	bin := filepath.Join(os.TempDir(), "millrace-river-bench")
	fmt.Println("building the River bench program (bench/river) ...")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building bench/river: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"bench"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &Error{Msg: "river bench failed", Code: ee.ExitCode()}
		}
		return err
	}
	return nil
}

// riverDir finds bench/river above the working directory.
func riverDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bench", "river", "go.mod")
		if _, err := os.Stat(p); err == nil {
			return filepath.Dir(p), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("bench/river/go.mod not found above " + wd)
		}
	}
}
