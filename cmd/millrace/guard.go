package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func init() {
	register(&command{name: "guard", summary: "watch and enforce the MVCC horizon per workload class (watch|check)", run: runGuard})
}

func guardUsage() {
	fmt.Fprintln(os.Stderr, `Usage:
  millrace guard watch --policy FILE [--database-url URL] [--standby-url URL ...] [--dry-run] [--metrics-addr ADDR]
  millrace guard check [--policy FILE] [--database-url URL] [--standby-url URL ...]
                       [--warn-age 5m] [--crit-age 30m] [--warn-xids N] [--crit-xids N]

watch runs the guard as a daemon; check prints one line and exits 0/1/2/3
for OK/WARNING/CRITICAL/UNKNOWN (Nagios plugin convention).
See docs/guard.md.`)
}

func runGuard(ctx context.Context, args []string) error {
	if len(args) < 1 {
		guardUsage()
		return errors.New("missing subcommand: watch or check")
	}
	switch args[0] {
	case "watch":
		return runGuardWatch(ctx, args[1:])
	case "check":
		return runGuardCheck(ctx, args[1:])
	case "-h", "--help", "help":
		guardUsage()
		return nil
	}
	return unknownCommand(args[0], []string{"watch", "check"})
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// guardPool opens the guard's own small pool, tagged with its
// application_name so that discovery leaves it out.
func guardPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("no database: pass --database-url or set DATABASE_URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = guard.ApplicationName
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

func runGuardWatch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guard watch", flag.ContinueOnError)
	url := fs.String("database-url", "", "primary to guard (default $DATABASE_URL)")
	policyPath := fs.String("policy", "", "policy file (YAML; see docs/guard.md)")
	var standbys stringList
	fs.Var(&standbys, "standby-url", "connection string of a standby to watch directly (repeatable)")
	dryRun := fs.Bool("dry-run", false, "log what would be done, do nothing")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics on ADDR/metrics (e.g. :9187)")
	logJSON := fs.Bool("log-json", false, "log as JSON instead of text")
	fs.Usage = func() { guardUsage(); fs.PrintDefaults() }
	if pos, err := parseArgs(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	if *policyPath == "" {
		return errors.New("guard watch needs --policy FILE (see examples/analytics-budget.yaml)")
	}
	policy, err := guard.LoadPolicy(*policyPath)
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *logJSON {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	logger := slog.New(cmdline.RedactingHandler(handler))
	pool, err := guardPool(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkWatchTables(ctx, pool, policy.WatchTables); err != nil {
		return fmt.Errorf("%s: %w", *policyPath, err)
	}
	if len(policy.Classes) == 0 {
		logger.Warn("millrace guard: the policy has no classes: the guard reports and warns about what holds the horizon but ends nothing", "policy", *policyPath)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g := guard.New(pool, policy, guard.Options{DryRun: *dryRun, Logger: logger, StandbyURLs: standbys, Registerer: reg})

	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		logger.Info("guard: serving metrics", "addr", ln.Addr().String()+"/metrics")
	}
	logger.Info("guard: watching", "classes", len(policy.Classes), "interval", policy.Interval.String(),
		"standbys", len(standbys), "dry_run", *dryRun)
	return g.Run(ctx)
}

// checkResult carries the check's status as the exit code.
type checkResult struct {
	status guard.Status
	line   string
}

func (c checkResult) Error() string {
	return fmt.Sprintf("status %s (exit %d)", c.status, int(c.status))
}
func (c checkResult) ExitCode() int { return int(c.status) }

// Quiet: the check's one line is on stdout; nothing more goes to stderr.
func (c checkResult) Quiet() {}

func runGuardCheck(ctx context.Context, args []string) error {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			guardUsage()
			return nil
		}
	}
	st, line := guardCheck(ctx, args)
	line = cmdline.Escape(cmdline.Redact(line))
	fmt.Println(line)
	if st == guard.OK {
		return nil
	}
	// The line on stdout is what a monitoring system reads; main also
	// notes the status on stderr and exits with it.
	return checkResult{st, line}
}

// guardCheck runs the check and returns its status and one-line summary.
func guardCheck(ctx context.Context, args []string) (guard.Status, string) {
	fs := flag.NewFlagSet("guard check", flag.ContinueOnError)
	url := fs.String("database-url", "", "primary to check (default $DATABASE_URL)")
	policyPath := fs.String("policy", "", "policy file (optional: its watch_tables are reported, and its classes' rules applied: a member breaking one is WARNING for a warn class, else CRITICAL)")
	var standbys stringList
	fs.Var(&standbys, "standby-url", "connection string of a standby to inspect directly (repeatable)")
	warnAge := fs.Duration("warn-age", 5*time.Minute, "WARNING when a holder is at least this old")
	critAge := fs.Duration("crit-age", 30*time.Minute, "CRITICAL when a holder is at least this old")
	warnXIDs := fs.Int64("warn-xids", 10_000_000, "WARNING when the oldest xmin is at least this many transactions old (-1: off)")
	critXIDs := fs.Int64("crit-xids", 100_000_000, "CRITICAL when the oldest xmin is at least this many transactions old (-1: off)")
	fs.Usage = func() {}
	if pos, err := parseArgs(fs, args); err != nil {
		return guard.Unknown, "UNKNOWN: " + oneLine(err)
	} else if len(pos) > 0 {
		return guard.Unknown, fmt.Sprintf("UNKNOWN: unexpected argument %q", pos[0])
	}
	if *warnAge > *critAge {
		return guard.Unknown, fmt.Sprintf("UNKNOWN: --warn-age %s is above --crit-age %s", *warnAge, *critAge)
	}
	if *critXIDs >= 0 && *warnXIDs > *critXIDs {
		return guard.Unknown, fmt.Sprintf("UNKNOWN: --warn-xids %d is above --crit-xids %d", *warnXIDs, *critXIDs)
	}
	var policy *guard.Policy
	if *policyPath != "" {
		p, err := guard.LoadPolicy(*policyPath)
		if err != nil {
			return guard.Unknown, "UNKNOWN: " + oneLine(err)
		}
		policy = p
	}
	pool, err := guardPool(ctx, *url)
	if err != nil {
		return guard.Unknown, "UNKNOWN: " + oneLine(err)
	}
	defer pool.Close()
	if policy != nil {
		if err := checkWatchTables(ctx, pool, policy.WatchTables); err != nil {
			return guard.Unknown, "UNKNOWN: " + *policyPath + ": " + oneLine(err)
		}
	}
	g := guard.New(pool, policy, guard.Options{StandbyURLs: standbys, Thresholds: guard.Thresholds{
		WarnAge: *warnAge, CritAge: *critAge, WarnXIDs: *warnXIDs, CritXIDs: *critXIDs,
	}})
	defer g.Close()
	st, line, _ := g.Check(ctx)
	return st, line
}

// checkWatchTables refuses a policy that names a table the database does
// not have (a typo would otherwise report nothing, silently).
func checkWatchTables(ctx context.Context, pool *pgxpool.Pool, tables []string) error {
	for _, t := range tables {
		var found bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t).Scan(&found); err != nil {
			return fmt.Errorf("watch_tables: %q: %w", t, err)
		}
		if !found {
			return fmt.Errorf("watch_tables: no table %q in this database", t)
		}
	}
	return nil
}
