package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

// DatabasePrefix begins the name of every database the bench creates on a
// server it is given (--database-url): millrace_bench_ and eight random hex
// digits. The bench works only in that database and drops only it.
const DatabasePrefix = "millrace_bench_"

// benchDatabase is the database the bench created for one run on a given
// server, reached through admin, the connection string it was given.
type benchDatabase struct {
	admin string // the URL the user gave: used for CREATE and DROP DATABASE only
	name  string
	url   string // admin with the database replaced by name
}

// createBenchDatabase creates a database of the bench's own on the server
// of admin. It refuses, in one line naming the privilege, when the role may
// not create databases. The bench never runs in the database it is given:
// every strategy drops and recreates its schema, and the user's queue or
// tables could share that schema's name.
func createBenchDatabase(ctx context.Context, admin string) (*benchDatabase, error) {
	// The statements run to the end even when Ctrl-C comes meanwhile, so
	// that the run knows whether there is a database to drop.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	var user string
	var may bool
	err = conn.QueryRow(cctx, `SELECT current_user::text, coalesce((SELECT r.rolcreatedb OR r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false)`).
		Scan(&user, &may)
	if err != nil {
		return nil, err
	}
	if !may {
		return nil, &Error{Code: 2, Msg: fmt.Sprintf("role %q lacks the CREATEDB privilege: on a server it is given the bench works in a database of its own, which it creates and drops, never in the given one; grant it (ALTER ROLE %s CREATEDB) or run with neither --database-url nor DATABASE_URL, on a throwaway cluster",
			user, pgx.Identifier{user}.Sanitize())}
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	name := DatabasePrefix + hex.EncodeToString(b)
	if _, err := conn.Exec(cctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create the bench's database %s: %w", name, err)
	}
	return &benchDatabase{admin: admin, name: name, url: pgcluster.WithDatabase(admin, name)}, nil
}

// where names the server and database, for the run's first line.
func (d *benchDatabase) where() string {
	cfg, err := pgx.ParseConfig(d.url)
	if err != nil {
		return "database " + d.name
	}
	return fmt.Sprintf("database %s on %s", d.name, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
}

// drop drops the bench's database, ending the sessions still in it. It
// runs on its own context: it is what a Ctrl-C'd run does last.
func (d *benchDatabase) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("drop the bench's database %s: %w", d.name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop the bench's database %s: %w", d.name, err)
	}
	return nil
}

// poolerPgBouncer is --pooler's one value: PgBouncer in transaction mode.
const poolerPgBouncer = "pgbouncer-transaction"

// settingName is what --pg-setting accepts as a setting's name.
var settingName = regexp.MustCompile(`^[a-z_][a-z0-9_.]*$`)

// applySettings makes the bench's database (url, which the bench created)
// run with settings (NAME=VALUE): ALTER DATABASE ... SET, which every new
// session in it takes, whatever its role. A setting the server does not
// know, or that a session cannot take, is refused in one line.
func applySettings(ctx context.Context, url string, settings []string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("--pg-setting: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return err
	}
	for _, kv := range settings {
		name, value, _ := strings.Cut(kv, "=")
		var sctx string
		if err := conn.QueryRow(ctx, "SELECT context FROM pg_settings WHERE name = $1", name).Scan(&sctx); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return &Error{Msg: fmt.Sprintf("--pg-setting %s: the server has no setting %q", kv, name), Code: 2}
			}
			return err
		}
		if sctx != "user" && sctx != "superuser" {
			return &Error{Msg: fmt.Sprintf("--pg-setting %s: %s is set for the whole server (%s), not per database; set it in postgresql.conf", kv, name, sctx), Code: 2}
		}
		lit := "'" + strings.ReplaceAll(value, "'", "''") + "'"
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET "+pgx.Identifier{name}.Sanitize()+" TO "+lit); err != nil {
			return &Error{Msg: fmt.Sprintf("--pg-setting %s: %v", kv, err), Code: 2}
		}
	}
	return nil
}

// withParam adds a query parameter to a postgres:// URL.
func withParam(u, key, value string) string {
	parsed, err := neturl.Parse(u)
	if err != nil || parsed.Scheme == "" {
		return u + " " + key + "=" + value
	}
	q := parsed.Query()
	q.Set(key, value)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}
