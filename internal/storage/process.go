package storage

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"
)

// Register records a new client process and takes its liveness lock on conn,
// a connection the process keeps for its whole life. While the lock is held
// the process is alive; when the connection ends (exit, crash, kill, network
// loss, Postgres restart) the lock goes with it and the leader rescues the
// process's unfinished batches. A process never reuses its id.
func Register(ctx context.Context, conn *pgx.Conn, name string) (int32, error) {
	host, _ := os.Hostname()
	// Lock first, then insert: a registered row is never seen unlocked
	// while its process lives.
	var id int32
	if err := conn.QueryRow(ctx, "SELECT nextval('millrace.process_id_seq')::int").Scan(&id); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", LockSpace, id); err != nil {
		return 0, err
	}
	_, err := conn.Exec(ctx, "INSERT INTO millrace.process (id, name, host, pid) VALUES ($1, $2, $3, $4)", id, name, host, os.Getpid())
	return id, err
}

// TryLead tries to become the maintenance leader on conn (a session lock held
// until the connection ends). It reports whether this process leads.
func TryLead(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, 0)", LockSpace).Scan(&ok)
	return ok, err
}

// deadProcessesSQL lists registered processes whose liveness lock is free.
const deadProcessesSQL = `
SELECT p.id FROM millrace.process p
WHERE NOT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ` + "1836412274" + `::oid AND l.objid = p.id::oid AND l.objsubid = 2)`
