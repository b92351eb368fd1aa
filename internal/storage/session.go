package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The settings of a process's session connection (package session), the
// one that LISTENs.

// sessionSettings is what the session connection sets for itself, at
// session level, whatever the role's or database's defaults:
//
//   - idle_session_timeout off: the connection sits idle by design (it
//     waits for notifications). A server that closed it would not change
//     the process's liveness (a lease, renewed through the pool), but
//     notifications sent while it reconnects would be missed.
//   - idle_in_transaction_session_timeout, statement_timeout and
//     lock_timeout off, and READ COMMITTED: it runs no transaction of the
//     protocol, only LISTEN, a ping and its label.
//   - TCP keepalives (30 s idle, 10 s apart, 3 probes): a connection to a
//     peer that vanished without closing it must not stay LISTENing on
//     the server for the operating system's default two hours. Set here
//     rather than as startup parameters, which a connection pooler refuses
//     unless told to ignore them (the session connection must not go
//     through a transaction pooler; package session checks that it does
//     not, with the backend's process id this returns).
const sessionSettings = `SELECT set_config('idle_session_timeout', '0', false),
	set_config('idle_in_transaction_session_timeout', '0', false),
	set_config('statement_timeout', '0', false), set_config('lock_timeout', '0', false),
	set_config('default_transaction_isolation', 'read committed', false),
	set_config('tcp_keepalives_idle', '30', false), set_config('tcp_keepalives_interval', '10', false),
	set_config('tcp_keepalives_count', '3', false),
	pg_backend_pid()`

// SetSessionSettings applies the session connection's settings to conn
// (see sessionSettings) and returns the process id of the backend that
// applied them (pg_backend_pid()).
func SetSessionSettings(ctx context.Context, conn *pgx.Conn) (backend int32, err error) {
	var skip [8]any
	dest := make([]any, 0, 9)
	for i := range skip {
		dest = append(dest, &skip[i])
	}
	dest = append(dest, &backend)
	err = conn.QueryRow(ctx, sessionSettings).Scan(dest...)
	return backend, err
}

// LabelSession names conn, in pg_stat_activity, as the session connection
// of process id (its application_name: SessionName).
func LabelSession(ctx context.Context, conn *pgx.Conn, id int32) error {
	_, err := conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", SessionName(id))
	return err
}
