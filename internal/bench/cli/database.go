package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/pgtest"
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
	return &benchDatabase{admin: admin, name: name, url: pgtest.WithDatabase(admin, name)}, nil
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
