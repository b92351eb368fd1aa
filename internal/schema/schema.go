// Package schema installs and removes the millrace storage protocol: the
// versioned migrations (tables, indexes, data moves; one pair of files per
// version) and the current definition of every function (functions/*.sql,
// one file per area), embedded in the binary and applied under an advisory
// lock so that several processes may migrate at once.
package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql functions/*.sql
var files embed.FS

// functionFiles are the files of functions/, in the order Migrate applies
// them (grants last: a function created since the last run gets EXECUTE
// for PUBLIC from Postgres until grants.sql revokes it).
var functionFiles = []string{"ring", "history", "insert", "claim", "ack", "leader", "admin", "grants"}

// functionsSince is the first version whose functions live in functions/:
// Migrate applies them once the database is at Latest and at least this.
const functionsSince = 7

// Functions returns the text Migrate applies after the versioned
// migrations (every functions/*.sql file in order) and its SHA-256.
func Functions() (text, hash string, err error) {
	var b strings.Builder
	for _, name := range functionFiles {
		body, err := files.ReadFile("functions/" + name + ".sql")
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(&b, "-- functions/%s.sql\n", name)
		b.Write(body)
		b.WriteString("\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return b.String(), hex.EncodeToString(sum[:]), nil
}

// Migration is one version of the schema.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// Status is a migration and whether (and when) it is applied.
type Status struct {
	Migration
	Applied   bool
	AppliedAt time.Time
}

// migrateLock is the advisory lock key taken while migrating ('mrmg').
const migrateLock = 1836216679

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, "migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		name := e.Name()
		var dir string
		switch {
		case strings.HasSuffix(name, ".up.sql"):
			dir = "up"
		case strings.HasSuffix(name, ".down.sql"):
			dir = "down"
		default:
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(name, ".up.sql"), ".down.sql")
		num, label, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("schema: bad migration file name %q", name)
		}
		body, err := files.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v, Name: label}
			byVersion[v] = m
		}
		if dir == "up" {
			m.Up = string(body)
		} else {
			m.Down = string(body)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("schema: migration %d lacks its up or down file", m.Version)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("schema: migration versions must run 1..n without gaps (found %d at position %d)", m.Version, i+1)
		}
	}
	return out, nil
}

// Latest is the newest version embedded in this binary.
func Latest() int {
	all, err := All()
	if err != nil || len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}

const bootstrap = `
CREATE SCHEMA IF NOT EXISTS millrace;
CREATE TABLE IF NOT EXISTS millrace.migration (
    version    int PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// withLock runs f on one connection holding the migration lock, so that
// concurrent migrators run one after another and each sees the other's work.
func withLock(ctx context.Context, pool *pgxpool.Pool, f func(conn *pgxpool.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return err
	}
	defer func() {
		// A session lock outlives a failed unlock: close the connection
		// instead of giving it back to the pool still holding the lock.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLock); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return f(conn)
}

func applied(ctx context.Context, conn *pgxpool.Conn) (map[int]time.Time, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('millrace.migration') IS NOT NULL").Scan(&exists); err != nil {
		return nil, err
	}
	out := map[int]time.Time{}
	if !exists {
		return out, nil
	}
	rows, err := conn.Query(ctx, "SELECT version, applied_at FROM millrace.migration")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out[v] = at
	}
	return out, rows.Err()
}

// migrationSettings is sent first in every migration's transaction (up
// and down): the role's or database's defaults must not cut a migration
// short; it takes what locks it needs and runs to the end.
// transaction_timeout (PostgreSQL 17 and later, which the CASE asks for)
// ends the session: set to 0 inside the transaction, the server stops the
// timer it started at BEGIN.
const migrationSettings = "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0; " +
	"SELECT " + NoTxTimeout

// NoTxTimeout is an SQL expression that turns transaction_timeout off for
// the rest of the transaction on a server that has it (PostgreSQL 17 and
// later) and leaves an older one, which does not know the setting, alone.
// The protocol's transactions (internal/storage) send it too.
const NoTxTimeout = "CASE WHEN current_setting('transaction_timeout', true) IS NOT NULL THEN set_config('transaction_timeout', '0', true) END"

// Up applies every migration not yet applied, up to target (0 = latest),
// and then, when the database is at the latest version, the functions of
// functions/ unless the newest set applied has the same hash: all in one
// transaction. It returns the versions it applied.
func Up(ctx context.Context, pool *pgxpool.Pool, target int) ([]int, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	if target == 0 {
		target = len(all)
	}
	if target < 0 || target > len(all) {
		return nil, fmt.Errorf("schema: no migration version %d (this binary has 1..%d)", target, len(all))
	}
	fnText, fnHash, err := Functions()
	if err != nil {
		return nil, err
	}
	var done []int
	err = withLock(ctx, pool, func(conn *pgxpool.Conn) error {
		have, err := applied(ctx, conn)
		if err != nil {
			return err
		}
		for v := range have {
			if v > len(all) {
				return fmt.Errorf("schema: database is at version %d, newer than this binary's %d", v, len(all))
			}
		}
		var todo []Migration
		for _, m := range all[:target] {
			if _, ok := have[m.Version]; !ok {
				todo = append(todo, m)
			}
		}
		withFunctions := target == len(all) && target >= functionsSince
		if withFunctions && len(todo) == 0 {
			cur, err := functionHash(ctx, conn)
			if err != nil {
				return err
			}
			withFunctions = cur != fnHash
		}
		if len(todo) == 0 && !withFunctions {
			return nil
		}
		return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrationSettings); err != nil {
				return err
			}
			for _, m := range todo {
				if _, err := tx.Exec(ctx, bootstrap); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, m.Up); err != nil {
					return fmt.Errorf("schema: migration %d (%s): %w", m.Version, m.Name, err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO millrace.migration (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
					return err
				}
				done = append(done, m.Version)
			}
			if !withFunctions {
				return nil
			}
			if _, err := tx.Exec(ctx, fnText); err != nil {
				return fmt.Errorf("schema: applying functions/: %w", err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO millrace.function_set (version, hash) VALUES ($1, $2)", len(all), fnHash)
			return err
		})
	})
	return done, err
}

// functionHash is the hash of the newest function set applied ("" when
// none has been).
func functionHash(ctx context.Context, conn *pgxpool.Conn) (string, error) {
	var h string
	err := conn.QueryRow(ctx, `SELECT coalesce((SELECT hash FROM millrace.function_set ORDER BY id DESC LIMIT 1), '')`).Scan(&h)
	return h, err
}

// Down reverts applied migrations newer than target, newest first. Down to 0
// removes the schema and every job in it.
func Down(ctx context.Context, pool *pgxpool.Pool, target int) ([]int, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	if target < 0 || target > len(all) {
		return nil, fmt.Errorf("schema: no migration version %d", target)
	}
	var done []int
	err = withLock(ctx, pool, func(conn *pgxpool.Conn) error {
		have, err := applied(ctx, conn)
		if err != nil {
			return err
		}
		if target == 0 && len(have) > 0 {
			// Down to 0 removes the schema whatever it holds: migration 1's
			// down, without stepping through versions that cannot be
			// reverted in place.
			err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, migrationSettings); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, all[0].Down)
				return err
			})
			if err != nil {
				return fmt.Errorf("schema: removing the schema: %w", err)
			}
			for i := len(all) - 1; i >= 0; i-- {
				if _, ok := have[all[i].Version]; ok {
					done = append(done, all[i].Version)
				}
			}
			return nil
		}
		for i := len(all) - 1; i >= target; i-- {
			m := all[i]
			if _, ok := have[m.Version]; !ok {
				continue
			}
			err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, migrationSettings); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, m.Down); err != nil {
					return fmt.Errorf("schema: reverting migration %d (%s): %w", m.Version, m.Name, err)
				}
				if m.Version == 1 {
					return nil // the schema, and the migration table with it, is gone
				}
				_, err := tx.Exec(ctx, "DELETE FROM millrace.migration WHERE version = $1", m.Version)
				return err
			})
			if err != nil {
				return err
			}
			done = append(done, m.Version)
		}
		return nil
	})
	return done, err
}

// List reports every embedded migration and whether it is applied.
func List(ctx context.Context, pool *pgxpool.Pool) ([]Status, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	have, err := applied(ctx, conn)
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(all))
	for i, m := range all {
		at, ok := have[m.Version]
		out[i] = Status{Migration: m, Applied: ok, AppliedAt: at}
	}
	return out, nil
}

// ErrNotMigrated is returned when the schema is missing or behind the binary.
var ErrNotMigrated = errors.New("millrace schema is not at this binary's version: run 'millrace migrate up' or millrace.Migrate")

// Check returns ErrNotMigrated unless every embedded migration is applied.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	st, err := List(ctx, pool)
	if err != nil {
		return err
	}
	for _, s := range st {
		if !s.Applied {
			return fmt.Errorf("%w (version %d missing)", ErrNotMigrated, s.Version)
		}
	}
	_, want, err := Functions()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	got, err := functionHash(ctx, conn)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w (the functions of this binary are not applied)", ErrNotMigrated)
	}
	return nil
}
