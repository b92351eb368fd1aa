package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The maintenance steps below run at maintenance cadence (about once a
// second) in the leader process only, each in its own READ COMMITTED
// transaction with statement_timeout and lock_timeout off (see RunTx).
// They are the only statements of the protocol allowed to take table locks beyond ROW EXCLUSIVE, and they take
// them with NOWAIT so that producers and consumers never queue behind them.
// Each takes the caller's leader term and fails with ErrFenced (IsFenced)
// once that term is over; term 0 is an operator's call, not fenced.

// RingAction is one thing a rotation round did or could not do.
type RingAction struct {
	Action  RingActionKind // what it did, or could not do
	Segment int16          // the slot (-1: none)
	Detail  string         // what it did and why, for a person
	// Holders are the process ids of the backends that held the slot of
	// an action RingBlocked (none: its tables were in use, by whom is not
	// known). They come from the lock table, never from Detail, which
	// names each holder by its application (one named "pid 123" would
	// name another backend).
	Holders []int32
}

// RingActionKind is what a rotation round did, or could not do, with a
// slot: millrace.rotate's column action.
type RingActionKind string

// The actions of a rotation round.
const (
	// RingRotated: Segment is the current slot now.
	RingRotated RingActionKind = "rotated"
	// RingReclaimed: Segment was reclaimed (truncated, what is still
	// needed carried forward).
	RingReclaimed RingActionKind = "reclaimed"
	// RingBlocked: Segment could not be reclaimed; Detail says why and
	// Holders who holds it.
	RingBlocked RingActionKind = "blocked"
	// RingWaiting: Segment stays current, no other slot is clean yet.
	RingWaiting RingActionKind = "waiting"
	// RingBusy: another rotation is running.
	RingBusy RingActionKind = "busy"
)

// DefaultMaxCarryBytes is the default bound of Rotate's maxCarryBytes, the
// SQL default of millrace.rotate's p_max_carry_bytes.
const DefaultMaxCarryBytes = 16 << 20

// Rotate runs one round of ring maintenance (millrace.rotate): it reclaims
// every slot that has been out of use for at least after, carrying forward
// what is still needed, and makes the next clean slot current once the
// current one is after old. Nothing waits on a lock; what could not be done
// is reported with its reason. A slot whose jobs not yet claimed take more
// than maxCarryBytes (stored) is reclaimed with those jobs moved once into
// the park, outside the ring (0: DefaultMaxCarryBytes).
func (s *Store) Rotate(ctx context.Context, term int64, after time.Duration, maxCarryBytes int64) ([]RingAction, error) {
	c, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	return rotateOn(ctx, c.Conn(), term, after, maxCarryBytes, 0)
}

// RotateWaiting is Rotate whose reclaims wait for their locks, each at
// most wait, in the lock queue ahead of the transactions that come after
// the ones holding them, instead of trying them NOWAIT. Each time the
// round's backend waits for another lock (a slot is several partitions,
// locked in turn), waiting is called with its process id (the leader then
// cancels the readers that hold the slot: readers in a loop of short
// transactions always hold it when a NOWAIT comes, and a reader that holds
// one partition may ask for the next one the round holds). Claims queue
// behind the waiting lock meanwhile, so the leader calls it only for a
// slot readers kept a rotation period past its time.
func (s *Store) RotateWaiting(ctx context.Context, term int64, after time.Duration, maxCarryBytes int64, wait time.Duration,
	waiting func(pid uint32)) ([]RingAction, error) {
	c, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	pid := c.Conn().PgConn().PID()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var last uint32 // the relation it was last seen waiting for
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			var rel *uint32
			err := s.Pool.QueryRow(wctx, "SELECT relation FROM pg_locks WHERE pid = $1 AND NOT granted", int32(pid)).Scan(&rel)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return
			case rel != nil && *rel != last:
				last = *rel
				waiting(pid)
			}
		}
	}()
	out, err := rotateOn(ctx, c.Conn(), term, after, maxCarryBytes, wait)
	stop()
	<-done
	return out, err
}

// rotateOn runs millrace.rotate on conn (wait 0: NOWAIT).
func rotateOn(ctx context.Context, conn *pgx.Conn, term int64, after time.Duration, maxCarryBytes int64, wait time.Duration) ([]RingAction, error) {
	if maxCarryBytes <= 0 {
		maxCarryBytes = DefaultMaxCarryBytes
	}
	var w *time.Duration
	if wait > 0 {
		w = &wait
	}
	var out []RingAction
	err := RunTx(ctx, conn, TxOpts{}, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (RingAction, error) {
			var a RingAction
			var action string
			err := r.Scan(&action, &a.Segment, &a.Detail, &a.Holders)
			a.Action = RingActionKind(action)
			return a, err
		})
		return err
	}, "SELECT action, coalesce(segment, -1), detail, pids FROM millrace.rotate(p_after => $1, p_term => $2, p_max_carry_bytes => $3, p_wait => $4)",
		after, termArg(term), maxCarryBytes, w)
	return out, fenced(err)
}

// Promote moves scheduled jobs that are due into the current slot
// (millrace.promote) and returns how many it moved. compactMin is the least
// number of promotions between two compactions of the schedule.
func (s *Store) Promote(ctx context.Context, term, compactMin int64) (int64, error) {
	var n int64
	err := s.tx(ctx, scanOne(&n), "SELECT millrace.promote($1, $2)", compactMin, termArg(term))
	return n, fenced(err)
}

// Released is a batch the leader released to any claimer of its queue.
type Released struct {
	Queue  string
	TickID int64
	Owner  int32 // the holder it was taken from
	Reason ReleaseReason
	// Charged is how many of its jobs the holder, dead or stuck, had
	// started and not finished: each used an attempt (and was discarded if
	// it was its last).
	Charged int
}

// ReleaseReason is why a batch was released (millrace.rescue's column
// reason), or why not.
type ReleaseReason string

// The reasons of a release.
const (
	// ReleaseDead: its holder's lease ran out.
	ReleaseDead ReleaseReason = "dead"
	// ReleaseStuck: its lease is older than Rescue's stuck.
	ReleaseStuck ReleaseReason = "stuck"
	// ReleaseHeld: not released, a transaction completing one of its
	// jobs (CompleteTx) is open.
	ReleaseHeld ReleaseReason = "held"
)

// Rescue releases the open batches whose holder is dead (its lease ran
// out), or whose lease is older than stuck, to any claimer of their queue
// (millrace.rescue); the jobs the holder was running, dead or stuck, are
// charged an attempt.
func (s *Store) Rescue(ctx context.Context, term int64, stuck time.Duration) ([]Released, error) {
	var out []Released
	err := s.tx(ctx, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Released, error) {
			var x Released
			var reason string
			err := r.Scan(&x.Queue, &x.TickID, &x.Owner, &reason, &x.Charged)
			x.Reason = ReleaseReason(reason)
			return x, err
		})
		return err
	}, "SELECT queue, tick_id, owner, reason, charged FROM millrace.rescue($1, $2)", stuck, termArg(term))
	return out, fenced(err)
}

// RingStats describes the ring of slots.
type RingStats struct {
	Current     int16
	Since       time.Time
	Rotations   int64
	Reclaims    int64
	LastReclaim time.Time
}

// Ring reads millrace.ring_stats.
func Ring(ctx context.Context, q Querier) (RingStats, error) {
	var st RingStats
	err := ReadCommitted(ctx, q, "SELECT current_slot, since, rotations, reclaims, last_reclaim FROM millrace.ring_stats()", nil,
		&st.Current, &st.Since, &st.Rotations, &st.Reclaims, &st.LastReclaim)
	return st, err
}

// Release gives the open batches held by process owner back to any claimer
// of their queue (millrace.release): a stopping process calls it for the
// jobs it will not finish. It returns how many batches it released.
func (s *Store) Release(ctx context.Context, owner int32) (int, error) {
	var n int
	err := s.tx(ctx, scanOne(&n), "SELECT millrace.release($1)", owner)
	return n, err
}

// Promoted is what a promote round did (PromoteDue).
type Promoted struct {
	N      int64     // jobs promoted
	Queues []string  // the queues they went to, to be announced
	Next   time.Time // when the next job not yet promoted is due (zero: none)
}

// PromoteDue runs a promote round under leader term term (0: none) that
// sends no NOTIFY (millrace.promote_due): the caller announces
// Promoted.Queues once it returns, after the round's commit, and sleeps
// until Promoted.Next. A NOTIFY in the round held the server's one
// notification lock through the round's durable commit, and every
// announcement waited behind it; the next due time came in a second call.
func (s *Store) PromoteDue(ctx context.Context, term, compactMin int64) (Promoted, error) {
	var p Promoted
	var next *time.Time
	err := s.tx(ctx, scanOne(&p.N, &p.Queues, &next), "SELECT promoted, queues, next_due FROM millrace.promote_due($1, $2)", compactMin, termArg(term))
	if next != nil {
		p.Next = *next
	}
	return p, fenced(err)
}

// Announce sends one NOTIFY for each of queues, outside any transaction
// of the protocol: their claimers, in every process, claim at once.
func (s *Store) Announce(ctx context.Context, queues []string) error {
	_, err := s.Pool.Exec(ctx, "SELECT pg_notify('millrace', q) FROM unnest($1::text[]) AS u(q)", queues)
	return err
}

// ExpireHistory truncates the history buckets older than the retention
// the database holds (millrace.retention) and returns how many it emptied.
func (s *Store) ExpireHistory(ctx context.Context, term int64) (int, error) {
	var n int
	err := s.tx(ctx, scanOne(&n), "SELECT millrace.expire_history($1)", termArg(term))
	return n, fenced(err)
}

// SetRetention sets history's retention (millrace.set_retention, an
// administrator's action); a zero duration keeps that value as it is. It
// returns the retention now. On a pool or a connection it runs at READ
// COMMITTED whatever the database's default (ReadCommitted).
func SetRetention(ctx context.Context, q Querier, completed, other time.Duration) (time.Duration, time.Duration, error) {
	var c, o *time.Duration
	if completed != 0 {
		c = &completed
	}
	if other != 0 {
		o = &other
	}
	err := ReadCommitted(ctx, q, "SELECT completed, other FROM millrace.set_retention($1, $2)", []any{c, o}, &completed, &other)
	return completed, other, err
}

// Retention is history's retention as the database holds it.
func Retention(ctx context.Context, q Querier) (time.Duration, time.Duration, error) {
	var c, o time.Duration
	err := q.QueryRow(ctx, "SELECT completed, other FROM millrace.retention()").Scan(&c, &o)
	return c, o, err
}

// Tally runs a tally round of history counts (millrace.tally) if the
// newest is at least every old; it returns the history rows it counted
// and whether it ran.
func (s *Store) Tally(ctx context.Context, term int64, every time.Duration) (int64, bool, error) {
	var n *int64
	// A round needs READ COMMITTED, whatever the database's default.
	err := s.tx(ctx, scanOne(&n), "SELECT millrace.tally($1, $2)", every, termArg(term))
	if err != nil || n == nil {
		return 0, false, fenced(err)
	}
	return *n, true, nil
}

// PeriodicLast is the newest slot of periodic job name that was enqueued
// (zero: none yet).
func (s *Store) PeriodicLast(ctx context.Context, name string) (time.Time, error) {
	var t *time.Time
	if err := s.tx(ctx, scanOne(&t), "SELECT millrace.periodic_last($1)", name); err != nil || t == nil {
		return time.Time{}, err
	}
	return *t, nil
}

// Now is the server's clock (clock_timestamp()): the time that decides
// state, whatever the skew of this host's clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) { return Clock(ctx, s.Pool) }

// PeriodicRun enqueues job j as slot (name, at) of a periodic job unless
// that slot was enqueued before (by any process); it reports whether it
// inserted.
func (s *Store) PeriodicRun(ctx context.Context, term int64, name string, at time.Time, j NewJob) (int64, bool, error) {
	var id *int64
	err := s.tx(ctx, scanOne(&id), `SELECT millrace.periodic_run(p_name => $1, p_slot_at => $2, p_kind => $3,
		p_args => $4::jsonb, p_queue => $5, p_priority => $6, p_max_attempts => $7, p_timeout_ms => $8, p_term => $9)`,
		name, at, j.Kind, string(j.Args), j.Queue, int32(j.Priority), int32(j.MaxAttempts), int32(j.Timeout.Milliseconds()),
		termArg(term))
	if err != nil || id == nil {
		return 0, false, fenced(err)
	}
	return *id, true, nil
}

// The leader watches the backends that hold the ring back and the
// listeners that do not read, and ends those its configuration says must
// end. The statements below read the server's statistics and lock tables
// with the caller's rights (not the schema owner's: a role sees another
// role's transaction only as a member of it or of pg_read_all_stats) and
// call its signal functions (another role's backend needs the same role
// or pg_signal_backend). They call no function of schema millrace.

// SlotHolder is a backend a rotation named as holding a slot
// (RingAction.Holders), as the caller's role sees it in pg_stat_activity.
type SlotHolder struct {
	PID         int32
	Role        string // "?": not visible
	Application string
	State       string // "": not visible
	// XactAge is how long its transaction has been open (nil: its start
	// is not visible to the caller's role).
	XactAge *time.Duration
	// XIDAge and XminAge are the ages, in transactions, of its
	// transaction id and of its snapshot (nil: none, or not visible).
	XIDAge, XminAge *int32
	// Xact identifies its transaction: its start, id and snapshot's xmin
	// as far as visible (the backend's next transaction has another).
	Xact string
	// Slots is how many slots of the ring it holds a lock on a partition
	// of: a write path holds only the slot it writes, a reader of the
	// queue's tables every slot it read.
	Slots int
	// Viewer is the caller's role (current_user), which saw it so.
	Viewer string
}

// SlotHolders describes the backends pids that still run, by process id.
func (s *Store) SlotHolders(ctx context.Context, pids []int32) ([]SlotHolder, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	rows, err := s.Pool.Query(ctx, `SELECT a.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, ''),
		coalesce(a.state, ''), extract(epoch FROM clock_timestamp() - a.xact_start)::float8,
		concat(a.xact_start::text, '/', a.backend_xid::text, '/', a.backend_xmin::text),
		age(a.backend_xid), age(a.backend_xmin), current_user::text, (`+slotsHeldSQL+`)
		FROM pg_stat_activity a WHERE a.pid = ANY($1) ORDER BY a.pid`, pids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SlotHolder, error) {
		var h SlotHolder
		var open *float64
		err := r.Scan(&h.PID, &h.Role, &h.Application, &h.State, &open, &h.Xact, &h.XIDAge, &h.XminAge, &h.Viewer, &h.Slots)
		if open != nil {
			age := time.Duration(*open * float64(time.Second))
			h.XactAge = &age
		}
		return h, err
	})
}

// slotsHeldSQL counts the slots of the ring backend a.pid holds a lock on
// a partition of: partitions of the schema's tables partitioned by slot,
// read from the catalogs (readable by any role). A partition's slot is the
// number its name ends with (job_2, tick_2: the schema names them so), not
// pg_get_expr of its bound, which opens the partition: behind a reclaim
// waiting for that partition the count itself waited, until the reclaim
// gave up.
const slotsHeldSQL = `SELECT count(DISTINCT substring(c.relname FROM '_([0-9]+)$'))::int
		FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation
		JOIN pg_inherits i ON i.inhrelid = c.oid
		JOIN pg_partitioned_table p ON p.partrelid = i.inhparent
		JOIN pg_attribute t ON t.attrelid = p.partrelid AND t.attnum = p.partattrs[0]
		WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.granted
		  AND c.relnamespace = 'millrace'::regnamespace AND t.attname = 'slot'`

// ClientWriter is a backend blocked writing to its client (wait_event
// ClientWrite): its client does not read what it is sent.
type ClientWriter struct {
	PID         int32
	Role        string // "?": not visible
	Application string
	// Process is the millrace process whose session connection it is
	// (its application_name is SessionName of it); nil: not one.
	Process *int64
}

// ClientWriters lists the backends, other than the caller's, blocked
// writing to their client. Seeing another role's wait event needs the
// same role or pg_read_all_stats.
func (s *Store) ClientWriters(ctx context.Context) ([]ClientWriter, error) {
	rows, err := s.Pool.Query(ctx, `SELECT a.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, ''),
		CASE WHEN starts_with(a.application_name, $1) AND substr(a.application_name, length($1) + 1) ~ '^[0-9]{1,9}$'
		     THEN substr(a.application_name, length($1) + 1)::bigint END
		FROM pg_stat_activity a
		WHERE a.wait_event = 'ClientWrite' AND a.pid <> pg_backend_pid()`, SessionNamePrefix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClientWriter, error) {
		var w ClientWriter
		err := r.Scan(&w.PID, &w.Role, &w.Application, &w.Process)
		return w, err
	})
}

// NotificationQueueUsage is the fraction of the server's notification
// queue in use (pg_notification_queue_usage()).
func (s *Store) NotificationQueueUsage(ctx context.Context) (float64, error) {
	var usage float64
	err := s.Pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage)
	return usage, err
}

// CancelBlocking cancels the statements (pg_cancel_backend) of those
// backends among pids that block backend waiter from a lock it waits for
// (pg_blocking_pids) and are readers of the ring now: they hold locks on
// partitions of two slots or more, which no producer's write does (one
// slot), and their transactions have written nothing (no xid). A flush
// or a claim reads several slots too, but it writes and ends in
// milliseconds: cancelled, it would roll back what it wrote (history rows
// outside the ring, dead tuples there), so it is waited for.
// It returns the ones it signalled. One statement reads who blocks, what
// each holds, and signals them, so a backend that has moved on since it
// was named is left alone: a pooled session named as a reader at the
// round's start that now runs an insert, queued ahead of the reclaim for
// a lock (a soft block), is a writer and is not cancelled. A cancel that
// reaches a backend between statements is ignored by the server.
func (s *Store) CancelBlocking(ctx context.Context, waiter int32, pids []int32) ([]int32, error) {
	rows, err := s.Pool.Query(ctx, `WITH b AS MATERIALIZED (
		SELECT a.pid AS p FROM unnest(pg_blocking_pids($1)) bp
		JOIN pg_stat_activity a ON a.pid = bp
		WHERE bp = ANY ($2::int[]) AND a.backend_xid IS NULL AND (`+slotsHeldSQL+`) >= 2)
		SELECT p FROM b WHERE pg_cancel_backend(p)`, waiter, pids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int32])
}

// CancelBackend cancels the statement backend pid runs
// (pg_cancel_backend): the statement fails, its transaction is aborted
// and lets go of its locks, the session stays. It reports whether the
// signal was sent.
func (s *Store) CancelBackend(ctx context.Context, pid int32) (bool, error) {
	var sent bool
	err := s.Pool.QueryRow(ctx, "SELECT pg_cancel_backend($1)", pid).Scan(&sent)
	return sent, err
}

// TerminateBackend ends backend pid's session (pg_terminate_backend). It
// reports whether the signal was sent.
func (s *Store) TerminateBackend(ctx context.Context, pid int32) (bool, error) {
	var sent bool
	err := s.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&sent)
	return sent, err
}
