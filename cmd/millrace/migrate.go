package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/millrace/millrace/internal/schema"
)

func init() {
	register(&command{name: "migrate", summary: "install, upgrade or remove the queue's schema (up|down|status)", run: runMigrate})
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	url := fs.String("database-url", "", "database to migrate (default $DATABASE_URL)")
	yes := fs.Bool("yes", false, "confirm a destructive action (down)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, `Usage: millrace migrate up [VERSION] | down VERSION --yes | status   [--database-url URL]

Flags may come anywhere on the line. down reverts migrations (down 0 drops
the schema and every job in it) and asks for --yes.`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		fs.Usage()
		return errors.New("missing action: up, down or status")
	}
	action := pos[0]
	version := -1
	switch {
	case len(pos) > 2 || (action == "status" && len(pos) > 1):
		return fmt.Errorf("unexpected argument %q", pos[len(pos)-1])
	case len(pos) == 2:
		v, err := strconv.Atoi(pos[1])
		if err != nil || v < 0 {
			return fmt.Errorf("version %q is not a non-negative number", pos[1])
		}
		version = v
	}
	switch action {
	case "up", "status":
	case "down":
		if version < 0 {
			return errors.New("down needs a target version (0 removes the schema and every job in it)")
		}
	default:
		return unknownCommand(action, []string{"up", "down", "status"})
	}
	if *url == "" {
		return errors.New("no database: pass --database-url or set DATABASE_URL")
	}
	pool, err := pgxpool.New(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if action != "status" {
		if err := needPrimary(ctx, pool); err != nil {
			return err
		}
	}
	switch action {
	case "up":
		if version < 0 {
			version = 0
		}
		warnSuperuser(ctx, pool)
		done, err := schema.Up(ctx, pool, version)
		for _, v := range done {
			fmt.Printf("applied %d\n", v)
		}
		if err == nil && len(done) == 0 {
			fmt.Println("already up to date")
		}
		return err
	case "down":
		// Every step is checked before any is taken: a down that stopped
		// at a version that cannot be reverted in place left the schema
		// between the two, having reverted the ones above it.
		have, err := checkDown(ctx, pool, version)
		if err != nil {
			return err
		}
		if have <= version {
			fmt.Printf("already at version %d: nothing to revert\n", have)
			return nil
		}
		if !*yes {
			what := fmt.Sprintf("reverts every migration above version %d (the schema is at %d)", version, have)
			if version == 0 {
				what = "drops schema millrace and every job in it"
			}
			return fmt.Errorf("down %d %s: pass --yes to confirm", version, what)
		}
		done, err := schema.Down(ctx, pool, version)
		for _, v := range done {
			fmt.Printf("reverted %d\n", v)
		}
		return err
	}
	st, err := schema.List(ctx, pool)
	if err != nil {
		return err
	}
	for _, s := range st {
		state := "pending"
		if s.Applied {
			state = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Printf("%3d  %-20s %s\n", s.Version, s.Name, state)
	}
	return nil
}

// irreversible is the message of a down migration that refuses to run
// (RAISE EXCEPTION '...'): its version cannot be reverted in place.
var irreversible = regexp.MustCompile(`RAISE EXCEPTION '((?:[^']|'')*)'`)

// checkDown returns the schema's version and, when a down to target
// would meet a migration that cannot be reverted in place, an error that
// says in one line which one, why, and how low a down can go, before
// anything is reverted. Down to 0 drops the schema and needs no step.
func checkDown(ctx context.Context, pool *pgxpool.Pool, target int) (int, error) {
	st, err := schema.List(ctx, pool)
	if err != nil {
		return 0, err
	}
	have := 0
	for _, s := range st {
		if s.Applied {
			have = max(have, s.Version)
		}
	}
	if target == 0 || have <= target {
		return have, nil
	}
	// From the newest down: the first that refuses stops the walk.
	for i := len(st) - 1; i >= 0; i-- {
		s := st[i]
		if !s.Applied || s.Version <= target {
			continue
		}
		if m := irreversible.FindStringSubmatch(s.Down); m != nil {
			why := strings.TrimPrefix(strings.ReplaceAll(m[1], "''", "'"), "millrace: ")
			return have, fmt.Errorf("down %d refused, nothing reverted: %s; from version %d a down goes no lower than %d", target, why, have, s.Version)
		}
	}
	return have, nil
}

// warnSuperuser prints one line on stderr when the role that migrates is
// a superuser: the role that migrates owns the schema, whose SECURITY
// DEFINER functions run with its rights, and docs/security.md says it
// should not be one. It warns and goes on (a first install on a laptop
// is often done as postgres).
func warnSuperuser(ctx context.Context, pool *pgxpool.Pool) {
	var super, user string
	if err := pool.QueryRow(ctx, "SELECT current_setting('is_superuser'), current_user").Scan(&super, &user); err != nil || super != "on" {
		return
	}
	fmt.Fprintf(os.Stderr, "millrace migrate: warning: migrating as %s, a superuser: the schema's owner should not be one, its SECURITY DEFINER functions run with its rights (see docs/security.md)\n", cmdline.Escape(user))
}
