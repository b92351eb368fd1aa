package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The statements of LISTEN/NOTIFY (package notifier): the session
// connection listens on the channels, and a producer's Sender notifies on
// a connection of its own.

// Listen makes conn LISTEN on each of channels (names of the schema's
// channels, which need no quoting), in order; it stops at the first error.
func Listen(ctx context.Context, conn *pgx.Conn, channels ...string) error {
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	return nil
}

// Notify sends one notification on channel with payload through conn
// (pg_notify: delivered when conn's transaction commits, at once outside
// one).
func Notify(ctx context.Context, conn *pgx.Conn, channel, payload string) error {
	_, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload)
	return err
}
