package millrace

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Stats ... (temporary stub; replaced by the real one on merge)
type Stats struct{ Rotations int64 }

// ReadStats ... (temporary stub)
func ReadStats(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (Stats, error) {
	var n int64
	err := db.QueryRow(ctx, "SELECT coalesce(max(id),1)-1 FROM millrace.rotation").Scan(&n)
	return Stats{Rotations: n}, err
}
