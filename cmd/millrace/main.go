// Command millrace is the single binary of the millrace project: the bench
// that reproduces queue collapse under a pinned MVCC horizon, the guard that
// watches and enforces the horizon, the queue's schema migrations, the web
// dashboard, and the operator commands (queues, jobs, queue).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/storage"
)

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]*command{}

// register adds a subcommand; each lives in its own file and registers
// itself from init.
func register(c *command) { commands[c.name] = c }

func usage() {
	fmt.Fprintln(os.Stderr, "millrace: a PostgreSQL job queue that survives a pinned MVCC horizon")
	fmt.Fprintln(os.Stderr, "\nUsage: millrace <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'millrace <command> -h' for a command's flags.")
}

func main() {
	register(&command{name: "help", summary: "list the commands", run: func(context.Context, []string) error { usage(); return nil }})
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		if os.Args[1] == "-h" || os.Args[1] == "--help" {
			usage()
			return
		}
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("unknown command %q", os.Args[1])
		if s := closest(os.Args[1], names); s != "" {
			msg += ": did you mean " + s + "?"
		}
		fmt.Fprintf(os.Stderr, "millrace: %s (millrace help lists the commands)\n", cmdline.Escape(msg))
		os.Exit(2)
	}
	// Whatever the command prints, no password or token of its command
	// line or environment appears in it.
	cmdline.SecretsFromArgs(os.Args[2:], []string{"database-url", "standby-url", "token", "basic-auth"}, []string{"MILLRACE_UI_TOKEN", "MILLRACE_UI_BASIC_AUTH"})
	// Ctrl-C and SIGTERM cancel the context; commands tear down what they
	// started (clusters, holder sessions) before returning.
	ctx, caught := interruptible()
	if err := c.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed, and asking for it is not an error
		}
		if sig := caught(); sig != nil {
			// What the command was doing was cut short by the operator
			// (or the service manager): one short line, not "context
			// canceled", and the shell's code for it (130 for SIGINT).
			fmt.Fprintf(os.Stderr, "millrace %s: interrupted\n", c.name)
			os.Exit(128 + int(sig.(syscall.Signal)))
		}
		var q quiet
		if !errors.As(err, &q) {
			fmt.Fprintf(os.Stderr, "millrace %s: %s\n", c.name, oneLine(err))
		}
		os.Exit(exitCode(err))
	}
}

// interruptible returns a context that SIGINT and SIGTERM cancel, and a
// function that returns the signal caught (nil: none). A command that
// returns an error once interrupted exits 128+signal (130 for Ctrl-C)
// with one line saying so; one that returns nil (a server shut down
// cleanly) exits 0.
func interruptible() (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var got os.Signal
	go func() {
		sig := <-sigs
		mu.Lock()
		got = sig
		mu.Unlock()
		cancel()
		for range sigs { // later ones are ignored while the command tears down
		}
	}()
	return ctx, func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// quiet is an error whose command has already said everything (guard
// check prints its one line on stdout); main only exits with its status.
type quiet interface{ Quiet() }

// oneLine renders err on one line (cmdline.Message): monitoring systems
// and log shippers read one line per event, and Postgres errors can span
// several; the root cause comes first, passwords are redacted.
func oneLine(err error) string { return cmdline.Message(err) }

// envFlags are the flags whose default is an environment variable. The
// flag's default stays empty (so that -h never prints the variable, whose
// value may hold a password); parseArgs fills it in.
var envFlags = map[string]string{"database-url": "DATABASE_URL", "token": "MILLRACE_UI_TOKEN", "basic-auth": "MILLRACE_UI_BASIC_AUTH"}

// parseArgs parses fs's flags wherever they appear among args and returns
// the other arguments in order (cmdline.Parse: a bad flag is a one-line
// error, -h prints the usage); flags left out that have an environment
// variable (envFlags) take its value.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	rest, err := cmdline.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	cmdline.FromEnv(fs, envFlags)
	return rest, nil
}

// exitCoder lets a command choose its exit status (guard check uses 1 and 2).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if e, ok := err.(exitCoder); ok {
		return e.ExitCode()
	}
	return 1
}

// needPrimary returns, for a command that writes (migrate up and down,
// jobs cancel and retry, queue pause and resume), one line saying that
// the server is a hot standby and to point --database-url at the primary,
// when pool reaches a server in recovery; a standby refuses every write,
// and without this the command failed with "cannot execute ... in a
// read-only transaction", or answered as if nothing were to be done. The
// server is named by host and port, never with the connection string.
func needPrimary(ctx context.Context, pool *pgxpool.Pool) error {
	return pool.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
		recovering, err := storage.InRecovery(ctx, conn)
		if err != nil {
			return err
		}
		if !recovering {
			return nil
		}
		cfg := conn.Conn().Config()
		server := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
		switch {
		case len(cfg.Fallbacks) > 0: // several hosts: the one it reached
			server = conn.Conn().PgConn().Conn().RemoteAddr().String()
		case strings.HasPrefix(cfg.Host, "/"):
			server = fmt.Sprintf("%s (Unix socket, port %d)", cfg.Host, cfg.Port)
		}
		return fmt.Errorf("the server at %s is a hot standby (read-only, in recovery): point --database-url (or DATABASE_URL) at the primary", server)
	})
}

// needSchema returns, for a command that reads or changes the queue
// (queues, jobs, queue), one line saying what to run when the database's
// schema is not the one this binary needs: none, older (an older schema
// lacks columns and functions, and a command failed on one, or answered
// as if there were no job), or newer. It reads what the dashboard reads
// (ops.SchemaVersions). A role that may not read the migration table is
// let through: the command's own error then says what it lacks.
func needSchema(ctx context.Context, pool *pgxpool.Pool) error {
	have, want, err := ops.SchemaVersions(ctx, pool)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case have == 0:
		return fmt.Errorf("this database has no millrace schema and this binary needs version %d: run `millrace migrate up` with the same --database-url", want)
	case have < want:
		return fmt.Errorf("the millrace schema of this database is at version %d and this binary needs version %d: run `millrace migrate up` with the same --database-url", have, want)
	case have > want:
		return fmt.Errorf("the millrace schema of this database is at version %d, newer than this binary's %d: use the millrace binary of the release that migrated it (or a newer one)", have, want)
	}
	return nil
}
