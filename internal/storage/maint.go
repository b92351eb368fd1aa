package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The maintenance steps below run at maintenance cadence (about once a
// second) in the leader process only. They are the only statements of the
// protocol allowed to take table locks beyond ROW EXCLUSIVE, and they take
// them with NOWAIT so that producers and consumers never queue behind them.

// each expands f for every segment and joins the parts with sep.
func each(sep string, f func(s int) string) string {
	parts := make([]string, Segments)
	for s := range parts {
		parts[s] = f(s)
	}
	return strings.Join(parts, sep)
}

// RotationState says which segment is current and since when.
type RotationState struct {
	Current int16
	Since   time.Time
}

// Rotation reads the current segment and when it became current.
func (s *Store) Rotation(ctx context.Context) (RotationState, error) {
	var st RotationState
	err := s.Pool.QueryRow(ctx, "SELECT segment, at FROM millrace.rotation ORDER BY id DESC LIMIT 1").Scan(&st.Current, &st.Since)
	return st, err
}

// isLockNotAvailable reports a NOWAIT or lock_timeout failure.
func isLockNotAvailable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "55P03")
}

// Rotate makes the next segment current if the current one is at least
// minAge old, the segment leaving the read window is drained and the next
// one holds no unfinished batch. The next segment's tables are emptied with
// TRUNCATE under NOWAIT locks: on any conflict Rotate gives up and reports
// why, to be retried at the next maintenance tick.
func (s *Store) Rotate(ctx context.Context, minAge time.Duration) (rotated bool, reason string, err error) {
	st, err := s.Rotation(ctx)
	if err != nil {
		return false, "", err
	}
	if age := time.Since(st.Since); age < minAge {
		return false, fmt.Sprintf("current segment is %s old", age.Round(time.Millisecond)), nil
	}
	cur := int(st.Current)
	next := (cur + 1) % Segments  // emptied now, becomes current
	leave := (cur + 2) % Segments // leaves the claim window {cur, leave}→{next, cur}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '50ms'"); err != nil {
			return err
		}
		// No producer may still be writing into the segment that leaves.
		if _, err := tx.Exec(ctx, fmt.Sprintf("LOCK TABLE millrace.job_%d IN SHARE MODE NOWAIT", leave)); err != nil {
			return err
		}
		// Every job of the leaving segment must be in a finished batch: all
		// its rows visible in the snapshot of the newest tick below the
		// queue's oldest unfinished tick.
		var pending int64
		q := fmt.Sprintf(`
WITH ticks AS (%s),
undone AS (
    SELECT t.queue, min(t.tick_id) AS tick_id FROM ticks t
    WHERE NOT t.carried AND NOT EXISTS (
        SELECT 1 FROM (%s) d WHERE d.queue = t.queue AND d.tick_id = t.tick_id)
    GROUP BY t.queue),
wm AS MATERIALIZED (
    SELECT q.queue, (
        SELECT t.snap FROM ticks t
        WHERE t.queue = q.queue AND (u.tick_id IS NULL OR t.tick_id < u.tick_id)
        ORDER BY t.tick_id DESC LIMIT 1) AS snap
    FROM (SELECT DISTINCT queue FROM millrace.job_%d) q LEFT JOIN undone u USING (queue))
SELECT count(*) FROM millrace.job_%d j JOIN wm USING (queue)
WHERE NOT coalesce(pg_visible_in_snapshot(j.txid, wm.snap), false)`,
			each(" UNION ALL ", func(s int) string {
				return fmt.Sprintf("SELECT queue, tick_id, snap, carried FROM millrace.tick_%d", s)
			}),
			each(" UNION ALL ", func(s int) string {
				return fmt.Sprintf("SELECT queue, tick_id FROM millrace.done_%d", s)
			}), leave, leave)
		if err := tx.QueryRow(ctx, q).Scan(&pending); err != nil {
			return err
		}
		if pending > 0 {
			reason = fmt.Sprintf("segment %d has %d jobs not yet finished", leave, pending)
			return errSkip
		}
		var undone int64
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM millrace.tick_%[1]d t WHERE NOT t.carried
			AND NOT EXISTS (SELECT 1 FROM millrace.done_%[1]d d WHERE d.queue = t.queue AND d.tick_id = t.tick_id)`, next)).Scan(&undone); err != nil {
			return err
		}
		if undone > 0 {
			reason = fmt.Sprintf("segment %d holds %d unfinished batches", next, undone)
			return errSkip
		}
		tables := []string{"job", "sched", "tick", "claim", "ack", "done", "promote"}
		names := make([]string, len(tables))
		for i, t := range tables {
			names[i] = fmt.Sprintf("millrace.%s_%d", t, next)
		}
		list := strings.Join(names, ", ")
		if _, err := tx.Exec(ctx, "LOCK TABLE "+list+" IN ACCESS EXCLUSIVE MODE NOWAIT"); err != nil {
			return err
		}
		// Scheduled jobs not yet promoted move to the current segment; the
		// copy has this transaction's xid, so it is promoted exactly once.
		if _, err := tx.Exec(ctx, fmt.Sprintf(`
WITH last AS (%s)
INSERT INTO millrace.sched_%d (id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error)
SELECT s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, s.due_at, s.last_error
FROM millrace.sched_%d s LEFT JOIN last ON true
WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, last.snap), false) AND s.due_at <= last.upto)`,
			lastPromoteSQL(cur, leave), cur, next)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "TRUNCATE "+list); err != nil {
			return err
		}
		// The newest tick of a queue (its next batch's prev_snap) and the
		// newest promotion round must stay inside the read window.
		if _, err := tx.Exec(ctx, fmt.Sprintf(`
INSERT INTO millrace.tick_%[1]d (queue, tick_id, prev_snap, snap, owner, njobs, carried)
SELECT DISTINCT ON (t.queue) t.queue, t.tick_id, t.prev_snap, t.snap, t.owner, 0, true
FROM millrace.tick_%[2]d t
WHERE NOT EXISTS (SELECT 1 FROM millrace.tick_%[3]d c WHERE c.queue = t.queue)
ORDER BY t.queue, t.tick_id DESC`, next, leave, cur)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`
INSERT INTO millrace.promote_%[1]d (round, upto, snap)
SELECT p.round, p.upto, p.snap FROM millrace.promote_%[2]d p
WHERE NOT EXISTS (SELECT 1 FROM millrace.promote_%[3]d)
ORDER BY p.round DESC LIMIT 1`, next, leave, cur)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO millrace.rotation (id, segment) VALUES (nextval('millrace.rotation_id_seq'), $1)", next); err != nil {
			return err
		}
		// The ledger keeps its newest 100 rows (budgeted: one dead tuple per
		// rotation).
		_, err := tx.Exec(ctx, "DELETE FROM millrace.rotation WHERE id < (SELECT max(id) - 100 FROM millrace.rotation)")
		return err
	})
	switch {
	case errors.Is(err, errSkip):
		return false, reason, nil
	case isLockNotAvailable(err):
		return false, "a segment is in use (lock not available); will retry", nil
	case err != nil:
		return false, "", err
	}
	return true, fmt.Sprintf("segment %d is current", next), nil
}

var errSkip = errors.New("skip")

// lastPromoteSQL selects the newest promotion round in the read window.
func lastPromoteSQL(a, b int) string {
	return fmt.Sprintf(`SELECT round, upto, snap FROM (
    (SELECT round, upto, snap FROM millrace.promote_%d ORDER BY round DESC LIMIT 1)
    UNION ALL
    (SELECT round, upto, snap FROM millrace.promote_%d ORDER BY round DESC LIMIT 1)) p
ORDER BY round DESC LIMIT 1`, a, b)
}

// Promote moves scheduled jobs that are due into the current job segment.
// A round promotes the rows due by now that the previous round did not:
// those due since its time, and those it could not yet see (committed after
// its snapshot), found by xid range and in-progress list, not by scanning
// history. It returns the number of jobs promoted.
func (s *Store) Promote(ctx context.Context) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		cur, err := CurrentSegment(ctx, tx)
		if err != nil {
			return err
		}
		prev := (int(cur) + 2) % Segments
		var snap string
		var now time.Time
		if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text, clock_timestamp()").Scan(&snap, &now); err != nil {
			return err
		}
		var lastUpto *time.Time
		var lastSnap *string
		var lastAt *time.Time
		err = tx.QueryRow(ctx, "SELECT upto, snap::text, upto FROM ("+lastPromoteSQL(int(cur), prev)+") l").Scan(&lastUpto, &lastSnap, &lastAt)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var where string
		args := []any{snap, now}
		if lastSnap == nil {
			where = "s.due_at <= $2"
		} else {
			args = append(args, *lastUpto, *lastSnap)
			where = `((s.due_at > $3 AND s.due_at <= $2)
			  OR (s.due_at <= $3 AND s.txid >= pg_snapshot_xmax($4::pg_snapshot))
			  OR (s.due_at <= $3 AND s.txid = ANY (ARRAY(SELECT pg_snapshot_xip($4::pg_snapshot)))))`
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(`
WITH due AS (
    SELECT s.* FROM (%s) s
    WHERE pg_visible_in_snapshot(s.txid, $1::pg_snapshot) AND %s),
ins AS (
    INSERT INTO millrace.job_%d (id, queue, kind, args, priority, attempt, max_attempts, created_at)
    SELECT id, queue, kind, args, priority, attempt, max_attempts, created_at FROM due
    RETURNING queue)
SELECT queue, count(*) FROM ins GROUP BY queue`,
			each(" UNION ALL ", func(s int) string { return fmt.Sprintf("SELECT * FROM millrace.sched_%d", s) }),
			where, cur), args...)
		if err != nil {
			return err
		}
		var queues []string
		for rows.Next() {
			var q string
			var c int64
			if err := rows.Scan(&q, &c); err != nil {
				return err
			}
			queues = append(queues, q)
			n += c
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, q := range queues {
			if _, err := tx.Exec(ctx, "SELECT pg_notify('millrace', $1)", q); err != nil {
				return err
			}
		}
		// Record the round when it promoted something, and at least once a
		// minute so that the xid range of the next round stays short.
		if n > 0 || lastAt == nil || now.Sub(*lastAt) > time.Minute {
			_, err = tx.Exec(ctx, fmt.Sprintf("INSERT INTO millrace.promote_%d (round, upto, snap) VALUES (nextval('millrace.tick_id_seq'), $1, $2::pg_snapshot)", cur), now, snap)
		}
		return err
	})
	return n, err
}

// orphan is an unfinished batch whose current lease holder is dead.
type orphan struct {
	queue          string
	tick, token    int64
	seg            int16
	prevSnap, snap string
}

// Rescue re-leases the unfinished batches of dead processes to process me
// and returns their jobs that have no ack yet. Each re-lease takes the
// batch's fence lock exclusively and appends a claim row with a new, higher
// token, so acks still in flight from the old holder are dropped (P7).
// Registered processes that are dead and own nothing are forgotten.
func (s *Store) Rescue(ctx context.Context, me int32) ([]*Batch, error) {
	var dead []int32
	rows, err := s.Pool.Query(ctx, deadProcessesSQL)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int32
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		dead = append(dead, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(dead) == 0 {
		return nil, nil
	}
	q := each(" UNION ALL ", func(s int) string {
		return fmt.Sprintf(`
SELECT t.queue, t.tick_id, %[1]d::smallint AS seg, t.prev_snap::text, t.snap::text,
       coalesce(c.owner, t.owner) AS owner, coalesce(c.token, t.tick_id) AS token
FROM millrace.tick_%[1]d t
LEFT JOIN LATERAL (SELECT owner, token FROM millrace.claim_%[1]d c WHERE c.tick_id = t.tick_id ORDER BY token DESC LIMIT 1) c ON true
WHERE NOT t.carried
  AND (t.owner = ANY ($1) OR t.tick_id IN (SELECT tick_id FROM millrace.claim_%[1]d WHERE owner = ANY ($1)))
  AND NOT EXISTS (SELECT 1 FROM millrace.done_%[1]d d WHERE d.queue = t.queue AND d.tick_id = t.tick_id)`, s)
	})
	rows, err = s.Pool.Query(ctx, "SELECT queue, tick_id, seg, prev_snap, snap, token FROM ("+q+") o WHERE owner = ANY ($1) ORDER BY tick_id", dead)
	if err != nil {
		return nil, err
	}
	var orphans []orphan
	for rows.Next() {
		var o orphan
		if err := rows.Scan(&o.queue, &o.tick, &o.seg, &o.prevSnap, &o.snap, &o.token); err != nil {
			return nil, err
		}
		orphans = append(orphans, o)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*Batch
	for _, o := range orphans {
		b, err := s.release(ctx, me, o)
		if err != nil {
			return out, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	// Forget dead processes that own no unfinished batch any more.
	// Their batches are all re-leased now (budgeted: one dead tuple per
	// process lifetime).
	_, err = s.Pool.Exec(ctx, "DELETE FROM millrace.process WHERE id = ANY ($1)", dead)
	return out, err
}

func (s *Store) release(ctx context.Context, me int32, o orphan) (*Batch, error) {
	var b *Batch
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, ($2 % 2147483647)::int)", FenceSpace, o.tick); err != nil {
			return err
		}
		var cur int64
		if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(max(token), $1) FROM millrace.claim_%d WHERE tick_id = $1", o.seg), o.tick).Scan(&cur); err != nil {
			return err
		}
		if cur != o.token {
			return nil // re-leased by someone else meanwhile
		}
		var token int64
		if err := tx.QueryRow(ctx, fmt.Sprintf(`INSERT INTO millrace.claim_%d (queue, tick_id, token, owner)
			VALUES ($1, $2, nextval('millrace.tick_id_seq'), $3) RETURNING token`, o.seg), o.queue, o.tick, me).Scan(&token); err != nil {
			return err
		}
		batch := &Batch{Queue: o.queue, TickID: o.tick, Seg: o.seg, Token: token}
		rows, err := tx.Query(ctx, fmt.Sprintf(`
SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at FROM (%s) j
WHERE j.queue = $1
  AND ((j.txid >= pg_snapshot_xmax($2::pg_snapshot) AND j.txid < pg_snapshot_xmax($3::pg_snapshot))
       OR j.txid = ANY (ARRAY(SELECT pg_snapshot_xip($2::pg_snapshot))))
  AND pg_visible_in_snapshot(j.txid, $3::pg_snapshot)
  AND NOT EXISTS (SELECT 1 FROM millrace.ack_%d a WHERE a.tick_id = $4 AND a.job_id = j.id)
ORDER BY j.priority, j.id`,
			each(" UNION ALL ", func(s int) string { return fmt.Sprintf("SELECT * FROM millrace.job_%d", s) }), o.seg),
			o.queue, o.prevSnap, o.snap, o.tick)
		if err != nil {
			return err
		}
		for rows.Next() {
			j := Job{Queue: o.queue}
			if err := rows.Scan(&j.ID, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt); err != nil {
				return err
			}
			batch.Jobs = append(batch.Jobs, j)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch.Jobs) == 0 {
			// Everything was acked before the owner died: close the batch.
			_, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO millrace.done_%d (queue, tick_id) VALUES ($1, $2)", o.seg), o.queue, o.tick)
			return err
		}
		b = batch
		return nil
	})
	return b, err
}
