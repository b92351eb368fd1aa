package millrace

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/storage"
)

// ErrStandby is returned, wrapped, when the server is a hot standby (in
// recovery, so read-only): by Start, which asks the pool's server before
// anything else (and refuses a Config.SessionURL that reaches a standby),
// and by Insert, InsertMany, InsertTx and InsertManyTx, whose write the
// server refused (SQLSTATE 25006, read_only_sql_transaction). The error's
// text is one line that names the server by host and port and says what
// to point at the primary; test for it with errors.Is. An insert's error
// still wraps the server's (errors.As a *pgconn.PgError). The insert path
// costs nothing more: an insert's error is looked at only once it failed.
// A read-only transaction on a primary (BEGIN READ ONLY,
// default_transaction_read_only) is no standby: its error is returned as
// the server gave it. See docs/deploy.md.
var ErrStandby = errors.New("millrace: the server is a hot standby (read-only, in recovery): point the pool at the primary")

// standbyError is ErrStandby for one server, on one line.
type standbyError struct {
	server string // host:port, as the connection string has it
	what   string // what to point at the primary
	hint   string // for a connection string with several hosts
	err    error  // the server's error, if a write failed
}

// The connections a standbyError may be about.
const (
	poolConn    = "the pool (DATABASE_URL)"
	sessionConn = "Config.SessionURL"
)

func (e *standbyError) Error() string {
	return "millrace: the server at " + e.server + " is a hot standby (read-only, in recovery): point " + e.what + " at the primary" + e.hint
}

func (e *standbyError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrStandby}
	}
	return []error{ErrStandby, e.err}
}

// newStandbyError names the server conn reaches: its host and port as
// configured, or, when the connection string lists several hosts, the
// address it connected to (its config names the first). No password.
func newStandbyError(conn *pgx.Conn, what string, err error) error {
	cfg := conn.Config()
	e := &standbyError{what: what, err: err}
	switch {
	case len(cfg.Fallbacks) > 0:
		e.server = conn.PgConn().Conn().RemoteAddr().String()
		e.hint = " (with several hosts in the connection string, add target_session_attrs=read-write)"
	case strings.HasPrefix(cfg.Host, "/"):
		e.server = fmt.Sprintf("%s (Unix socket, port %d)", cfg.Host, cfg.Port)
	default:
		e.server = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	}
	return e
}

// refuseStandby returns ErrStandby when the pool reaches a server in
// recovery: a worker could neither register nor claim there. On the same
// connection it checks that the pool can read the server's times
// (checkTextStyle).
func (c *Client) refuseStandby(ctx context.Context) error {
	return c.db.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
		recovering, err := storage.InRecovery(ctx, conn)
		if err != nil {
			return err
		}
		if recovering {
			return newStandbyError(conn.Conn(), poolConn, nil)
		}
		return checkTextStyle(conn.Conn())
	})
}

// onStandby returns err, a failed insert through q, as ErrStandby when
// the server refused a write (25006) because it is in recovery; else err
// as it is. A transaction's connection says so without a round trip
// (in_hot_standby, reported by PostgreSQL 14 and later); otherwise, as
// through a pooler, the pool is asked.
func (c *Client) onStandby(ctx context.Context, q storage.Querier, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" {
		return err
	}
	if tx, ok := q.(interface{ Conn() *pgx.Conn }); ok && tx.Conn() != nil {
		switch tx.Conn().PgConn().ParameterStatus("in_hot_standby") {
		case "on":
			return newStandbyError(tx.Conn(), poolConn, err)
		case "off":
			return err
		}
	}
	var standby error
	c.db.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
		if recovering, qerr := storage.InRecovery(ctx, conn); qerr == nil && recovering {
			standby = newStandbyError(conn.Conn(), poolConn, err)
		}
		return nil
	})
	if standby != nil {
		return standby
	}
	return err
}

// sessionOnStandby returns ErrStandby, for Config.SessionURL, when the
// session connection reached a standby: a standby refuses LISTEN. The
// server says so when the connection starts (in_hot_standby, PostgreSQL
// 14 and later): no round trip.
func sessionOnStandby(conn *pgx.Conn) error {
	if conn.PgConn().ParameterStatus("in_hot_standby") == "on" {
		return newStandbyError(conn, sessionConn, nil)
	}
	return nil
}
