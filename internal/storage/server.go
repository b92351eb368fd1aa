package storage

import (
	"context"
	"time"
)

// What a client asks of the server itself, outside the protocol's
// functions: its clock and whether it is a standby.

// Clock is the server's clock (clock_timestamp()) read through q: the time
// that decides state, whatever the skew of this host's clock.
func Clock(ctx context.Context, q Querier) (time.Time, error) {
	var t time.Time
	err := q.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
	return t, err
}

// InRecovery reports whether the server q reaches is in recovery (a hot
// standby, read-only: pg_is_in_recovery()).
func InRecovery(ctx context.Context, q Querier) (bool, error) {
	var recovering bool
	err := q.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
	return recovering, err
}
