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
	"github.com/millrace/millrace/ui"
)

func init() {
	register(&command{name: "ui", summary: "serve the web dashboard: queues, jobs, actions, the horizon", run: runUI})
}

// uiApplicationName tags the dashboard's connections in pg_stat_activity.
const uiApplicationName = "millrace-ui"

func runUI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	url := fs.String("database-url", "", "database of the queue (default $DATABASE_URL)")
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve on")
	token := fs.String("token", "", "require this token of every request (default $MILLRACE_UI_TOKEN)")
	basic := fs.String("basic-auth", "", "require HTTP basic auth USER:PASS (default $MILLRACE_UI_BASIC_AUTH)")
	policy := fs.String("policy", "", "guard policy file: name workload classes and show what the guard would do (dry run)")
	readOnly := fs.Bool("read-only", false, "offer no action, whatever the database role may do")
	hosts := fs.String("allowed-hosts", os.Getenv("MILLRACE_UI_ALLOWED_HOSTS"), "names the dashboard is reached as, comma-separated (\"queue.example.com\", \".example.com\" and its subdomains); localhost, IP addresses and the --listen host are always allowed (default $MILLRACE_UI_ALLOWED_HOSTS)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, `Usage: millrace ui [--database-url URL] [--listen 127.0.0.1:8080] [--token T | --basic-auth USER:PASS]
                   [--allowed-hosts NAME,...] [--policy FILE] [--read-only]

Serves the dashboard: queues with live charts, jobs with search and every
attempt, retry/cancel/pause/resume when the role may execute them, and the
horizon page. Without --token or --basic-auth anyone who reaches the
address may use it: keep it on 127.0.0.1 or behind your own proxy. It
answers only requests for localhost, an IP address, the --listen host and
the --allowed-hosts names (a defence against DNS rebinding): reached by
another name, list it. See docs/ui.md.`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	opts := ui.Options{Token: *token, ReadOnly: *readOnly, Logger: slog.New(cmdline.RedactingHandler(slog.NewTextHandler(os.Stderr, nil)))}
	if *basic != "" {
		u, p, ok := strings.Cut(*basic, ":")
		if !ok || u == "" || p == "" {
			return errors.New("--basic-auth wants USER:PASS")
		}
		opts.BasicAuthUser, opts.BasicAuthPassword = u, p
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			opts.AllowedHosts = append(opts.AllowedHosts, h)
		}
	}
	if h, _, err := net.SplitHostPort(*listen); err == nil && h != "" {
		opts.AllowedHosts = append(opts.AllowedHosts, h) // served as the name it listens on
	}
	if *policy != "" {
		p, err := guard.LoadPolicy(*policy)
		if err != nil {
			return err
		}
		opts.Policy, opts.PolicyName = p, *policy
	}
	pool, err := opPool(ctx, *url, uiApplicationName)
	if err != nil {
		return err
	}
	defer pool.Close()
	var haveSchema bool
	if err := pool.QueryRow(ctx, "SELECT to_regnamespace('millrace') IS NOT NULL").Scan(&haveSchema); err == nil && !haveSchema {
		// The horizon page works without it; the queue's pages wait for it.
		fmt.Fprintln(os.Stderr, "millrace ui: warning: "+cmdline.NoSchema)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: ui.New(pool, opts), ReadHeaderTimeout: 10 * time.Second}
	auth := "no authentication"
	switch {
	case opts.Token != "":
		auth = "token required (open http://" + ln.Addr().String() + "/?token=...)"
	case opts.BasicAuthUser != "":
		auth = "basic auth required"
	}
	fmt.Fprintf(os.Stderr, "millrace ui: serving http://%s/ (%s)\n", ln.Addr(), auth)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// opPool opens a small pool for an operator command, tagged with app.
func opPool(ctx context.Context, url, app string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("no database: pass --database-url or set DATABASE_URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
