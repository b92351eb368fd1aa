// Package maint runs the protocol's maintenance in the leader process, at
// maintenance cadence: renew the leader's term, promote due scheduled jobs,
// release the batches of dead or stuck holders to any claimer, and rotate
// and reclaim the ring. Every step passes the leader's term, and the first
// step refused for it (the term is over) ends the loop. Nothing here runs
// per job.
package maint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Config configures the maintenance loop.
type Config struct {
	Store  *storage.Store
	Logger *slog.Logger
	// Owner is the leading process and Term its leader term (0: an
	// operator's rounds, not fenced, never renewed).
	Owner int32
	Term  int64
	// LeaderLease is how long each renewal extends the term (default
	// storage.DefaultLeaderLease). A round renews it first, and Run renews
	// it beside the rounds too, at least three times a lease whatever Every
	// is and however long a round takes (a 1 s lease renewed by 1 s rounds
	// ran out at every round: a new term each second, and promotion and
	// rescue stalled while none was held). A leader whose process stops
	// loses its term, and so does one whose round has run for ten rounds
	// or three leases (stuck): its renewals stop.
	LeaderLease time.Duration
	// Every is the maintenance cadence (default 1s).
	Every time.Duration
	// RotateAfter is the life of a slot as current, and the grace before
	// a slot that left use is reclaimed (default 10s).
	RotateAfter time.Duration
	// MaxCarryBytes bounds the jobs not yet claimed that one reclaim
	// copies forward, in stored bytes (default
	// storage.DefaultMaxCarryBytes, 16 MiB): a slot holding a larger
	// backlog moves once into the park (storage.Store.Rotate).
	MaxCarryBytes int64
	// StuckAfter releases a batch whose lease is older than this even
	// though its holder lives (default 1h).
	StuckAfter time.Duration
	// CompactMin is the least number of promoted jobs between two
	// compactions of the schedule (default 10000).
	CompactMin int64
	// PromoterRuns says a Promoter runs beside the rounds under the same
	// term (as the client runs one): the rounds then leave promotion to
	// it rather than promote a second time a second.
	PromoterRuns bool
	// LogEvery rate-limits the log line that says why a slot cannot be
	// reclaimed or the ring cannot rotate (default 30s per reason kind).
	LogEvery time.Duration
	// OnRotate observes each round's actions (for tests and metrics).
	OnRotate func([]storage.RingAction)
	// OnRelease observes each batch released to other claimers.
	OnRelease func(storage.Released)
	// Periodic jobs to enqueue at each slot of their schedule.
	Periodic []Periodic
	// TallyEvery is the least time between two tally rounds of history
	// counts (default 10s): a count of completed or discarded jobs reads
	// the tally and the history written since its newest round.
	TallyEvery time.Duration
	// ListenerStuckAfter is how long a millrace process's session backend
	// may stay blocked writing notifications its client does not read (a
	// stopped process: SIGSTOP, a paused VM) while the notification queue
	// is in use, before the leader ends it (default 1 min). PostgreSQL
	// cannot empty its notification queue past the oldest unread
	// notification of any listener; once the queue is full, every NOTIFY,
	// and so every insert in a transaction, fails at commit. The process's
	// batches are then released, as a dead process's are; when it resumes,
	// its acks for them are dropped. Other listeners that do not read are
	// named, not ended.
	ListenerStuckAfter time.Duration
	// OnEndListener observes each listener ended (for tests).
	OnEndListener func(pid int32)
	// RingReaderLimit bounds how long a reader of the queue's tables may
	// hold the ring (0, the default: no bound; the leader only names it).
	// A transaction that has read the queue's partitioned tables (SELECT
	// count(*) FROM millrace.jobs, a report, a pg_dump) holds a lock on a
	// partition of every slot it read until it ends, and no slot it holds
	// can be reclaimed: storage then grows with arrivals until it ends.
	// When a slot cannot be reclaimed, the leader ends each backend that
	// holds it whose transaction has been open longer than this and that
	// holds partitions of two slots or more (a write path holds only the
	// slot it writes: a producer's transaction, however long, is named,
	// never ended): a backend running a statement is cancelled
	// (pg_cancel_backend: the statement fails, its transaction is aborted
	// and lets go of its locks, the session stays); one idle in its
	// transaction, or still holding the ring a round after a cancel, is
	// terminated (pg_terminate_backend: a cancel does nothing to a
	// session with no statement running). Each is logged at level Error,
	// with its pid, role, application and transaction age, when it is
	// ended; the warning that names the holders meanwhile says when it
	// will be. A transaction's age is its real age when the leader's
	// role sees it (the same role, or pg_read_all_stats), else how long
	// this leader has seen it hold the ring. Ending another role's backend
	// needs the same role or pg_signal_backend; otherwise it is logged as
	// not ended.
	RingReaderLimit time.Duration
	// OnEndReader observes each reader of the ring ended ("cancelled" or
	// "terminated"), by RingReaderLimit or because it kept a slot past its
	// time (for tests).
	OnEndReader func(pid int32, how string)
}

// Periodic is a job enqueued at every slot of a schedule.
type Periodic struct {
	Name     string
	Schedule interface{ Next(time.Time) time.Time }
	Job      func() (storage.NewJob, error) // the job to enqueue at a slot
	// RunOnStart enqueues the latest slot at or before the leader's start
	// when the job never ran; otherwise its first slot is the next one.
	RunOnStart bool
}

func (cfg *Config) defaults() {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.RotateAfter <= 0 {
		cfg.RotateAfter = 10 * time.Second
	}
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = time.Hour
	}
	if cfg.MaxCarryBytes <= 0 {
		cfg.MaxCarryBytes = storage.DefaultMaxCarryBytes
	}
	if cfg.CompactMin <= 0 {
		cfg.CompactMin = 10000
	}
	if cfg.LogEvery <= 0 {
		cfg.LogEvery = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TallyEvery <= 0 {
		cfg.TallyEvery = 10 * time.Second
	}
	if cfg.ListenerStuckAfter <= 0 {
		cfg.ListenerStuckAfter = time.Minute
	}
	if cfg.LeaderLease <= 0 {
		cfg.LeaderLease = storage.DefaultLeaderLease
	}
}

// ErrLostLead is returned by Run and Step when the leader's term is over
// (another process took over, or the lease ran out before a renewal): the
// process must stop leading.
var ErrLostLead = storage.ErrFenced

// Run loops until ctx ends or the term is over (it returns ErrLostLead).
// It is called only while this process holds a leader term; other errors
// are logged and retried at the next round.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	m := New(cfg)
	rctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	// The renewer stops before Run returns, whatever ended the rounds.
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	var roundStart atomic.Int64 // unix nanoseconds; 0 between rounds
	if cfg.Term != 0 {
		// The term is renewed at least three times a lease, beside the
		// rounds (a round renews it first too): a round that takes longer
		// than the lease (a rotation carrying a backlog, a loaded machine)
		// does not lose it. A round that has run for stuckRound is taken
		// to be stuck: the renewals stop and the term runs out, so that
		// another process takes over and this one is refused at its next
		// step. An operator's rounds (term 0) have no term to renew.
		renewEvery := min(cfg.Every, max(cfg.LeaderLease/3, 10*time.Millisecond))
		stuckRound := max(10*cfg.Every, 3*cfg.LeaderLease)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(renewEvery)
			defer t.Stop()
			for {
				select {
				case <-rctx.Done():
					return
				case <-t.C:
				}
				if rs := roundStart.Load(); rs != 0 && time.Since(time.Unix(0, rs)) > stuckRound {
					continue
				}
				if _, err := m.renew(rctx); errors.Is(err, ErrLostLead) {
					cancel(ErrLostLead)
					return
				}
			}
		}()
	}
	lost := func(err error) error {
		if errors.Is(context.Cause(rctx), ErrLostLead) {
			return ErrLostLead
		}
		return err
	}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		roundStart.Store(time.Now().UnixNano())
		err := m.Step(rctx)
		roundStart.Store(0)
		if err != nil {
			return lost(err)
		}
		select {
		case <-rctx.Done():
			return lost(ctx.Err())
		case <-t.C:
		}
	}
}

// Maintainer is one leader's maintenance state (what it logged when).
type Maintainer struct {
	cfg     Config
	logged  map[string]time.Time
	started time.Time            // the server's time at the first periodic round
	expired time.Time            // when history was last expired
	tallied time.Time            // when history was last tallied (or found tallied by another leader)
	last    map[string]time.Time // newest slot enqueued, per periodic job
	holders map[holderKey]time.Time
	writers map[int32]time.Time // backends seen blocked writing to their client, since when
	// cancels are the readers of the ring this leader cancelled, by
	// backend and transaction: one still holding at a later round is
	// terminated.
	cancels map[holderKey]bool
	// overdue says since when each slot has been named blocked at every
	// round, and by which readers of the ring (backends holding partitions
	// of two slots or more, named at the last round, by process id).
	overdue map[int16]time.Time
	readers map[int16][]holder
}

// readerWait is how long the leader's round waits for the locks of a slot
// readers kept past its time, while it cancels their statements.
const readerWait = 100 * time.Millisecond

// holder is a backend a rotation named as holding a slot, as the leader
// sees it.
type holder struct {
	key              holderKey
	role, app, state string
	// age is its transaction's age: the real one when visible (ageKnown),
	// else how long this leader has seen it hold the slot.
	age      time.Duration
	ageKnown bool
	slots    int // the slots of the ring it holds partitions of
	desc     string
}

// holderKey is a backend seen holding a slot the leader could not reclaim,
// and what it held it with (its transaction's start or ids when visible).
type holderKey struct {
	pid  int32
	slot int16
	xact string
}

// New makes a Maintainer whose Step tests can call directly.
func New(cfg Config) *Maintainer {
	cfg.defaults()
	return &Maintainer{cfg: cfg, logged: map[string]time.Time{}, last: map[string]time.Time{},
		holders: map[holderKey]time.Time{}, writers: map[int32]time.Time{}, cancels: map[holderKey]bool{},
		overdue: map[int16]time.Time{}, readers: map[int16][]holder{}}
}

// renew renews the leader's term (an operator's rounds, term 0, have none
// to renew: renewed). A failure to reach the server is logged and not an
// error: the next renewal tries again, and the steps of a round are
// refused if the term ran out meanwhile. It returns ErrLostLead once the
// term is over.
func (m *Maintainer) renew(ctx context.Context) (renewed bool, err error) {
	cfg := &m.cfg
	if cfg.Term == 0 {
		return true, nil
	}
	got, err := cfg.Store.Lead(ctx, cfg.Owner, cfg.Term, cfg.LeaderLease)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: renewing the leader term failed", "term", cfg.Term, "err", err)
		}
		return false, nil
	case got == 0:
		return false, ErrLostLead
	}
	return true, nil
}

// Step runs one round of maintenance: it renews the leader's term, then
// runs each step under it. It returns ErrLostLead (and does nothing more)
// once the term is over.
func (m *Maintainer) Step(ctx context.Context) error {
	cfg := &m.cfg
	renewed, err := m.renew(ctx)
	if err != nil {
		return err
	}
	fencedErr := func(err error) bool { return storage.IsFenced(err) }
	if cfg.PromoterRuns {
		// promotion is the promoter's
	} else if n, err := cfg.Store.Promote(ctx, cfg.Term, cfg.CompactMin); fencedErr(err) {
		return ErrLostLead
	} else if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
		}
	} else if n > 0 {
		cfg.Logger.Debug("millrace: promoted scheduled jobs", "n", n)
	}
	released, err := cfg.Store.Rescue(ctx, cfg.Term, cfg.StuckAfter)
	if fencedErr(err) {
		return ErrLostLead
	}
	if err != nil && ctx.Err() == nil {
		cfg.Logger.Warn("millrace: rescue failed", "err", err)
	}
	for _, r := range released {
		if r.Reason == storage.ReleaseHeld {
			// Not released: a transaction that completes one of its jobs
			// (CompleteTx) is open; the round does not wait for it.
			key := "held" + strconv.FormatInt(r.TickID, 10)
			if time.Since(m.logged[key]) >= cfg.LogEvery {
				m.logged[key] = time.Now()
				cfg.Logger.Warn("millrace: a batch cannot be released while a transaction completing one of its jobs (CompleteTx) is open; it is tried again at each round",
					"queue", r.Queue, "tick", r.TickID, "holder", r.Owner)
			}
			continue
		}
		lvl := slog.LevelInfo
		if r.Reason == storage.ReleaseStuck || r.Charged > 0 {
			lvl = slog.LevelWarn
		}
		cfg.Logger.Log(ctx, lvl, "millrace: released a batch to other claimers", "queue", r.Queue, "tick", r.TickID,
			"holder", r.Owner, "reason", r.Reason, "running_jobs_charged_an_attempt", r.Charged)
		if cfg.OnRelease != nil {
			cfg.OnRelease(r)
		}
	}
	if err := m.runPeriodic(ctx); err != nil {
		return err
	}
	if renewed {
		// Not fenced by the server: only in a round whose term was
		// renewed (or an operator's round).
		m.watchListeners(ctx)
	}
	if time.Since(m.tallied) >= cfg.TallyEvery {
		if n, ran, err := cfg.Store.Tally(ctx, cfg.Term, cfg.TallyEvery); fencedErr(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("millrace: tallying history failed", "err", err)
			}
		} else {
			m.tallied = time.Now()
			if ran {
				cfg.Logger.Debug("millrace: history tallied", "rows", n)
			}
		}
	}
	// History expires by the retention the database holds (the
	// administrator's), about once a minute.
	if time.Since(m.expired) >= time.Minute {
		m.expired = time.Now()
		if n, err := cfg.Store.ExpireHistory(ctx, cfg.Term); fencedErr(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("millrace: expiring history failed", "err", err)
			}
		} else if n > 0 {
			cfg.Logger.Debug("millrace: history buckets truncated", "n", n)
		}
	}
	start := time.Now()
	actions, err := m.rotate(ctx)
	if took := time.Since(start); took > 100*time.Millisecond {
		cfg.Logger.Info("millrace: slow rotation round", "took", took.Round(time.Millisecond), "actions", len(actions))
	}
	if fencedErr(err) {
		return ErrLostLead
	}
	if err != nil {
		if ctx.Err() == nil {
			cfg.Logger.Warn("millrace: rotation failed", "err", err)
		}
		return nil
	}
	seen := map[holderKey]bool{}
	var held []holder
	blocked := map[int16]bool{}
	for _, a := range actions {
		switch a.Action {
		case storage.RingRotated, storage.RingReclaimed:
			cfg.Logger.Debug("millrace: "+string(a.Action), "detail", a.Detail)
		case storage.RingBlocked, storage.RingWaiting:
			// Who holds the slot, watched at every round (their age as
			// this leader saw it), named once per LogEvery.
			holders := m.watchHolders(ctx, a, seen)
			held = append(held, holders...)
			if a.Action == storage.RingBlocked {
				blocked[a.Segment] = true
				if _, ok := m.overdue[a.Segment]; !ok {
					m.overdue[a.Segment] = time.Now()
				}
				var readers []holder
				for _, h := range holders {
					if h.slots >= 2 && (h.state == "active" || h.state == "") {
						readers = append(readers, h)
					}
				}
				m.readers[a.Segment] = readers
			}
			// Rate-limited: one line per kind of obstacle and slot per LogEvery.
			key := string(a.Action) + string(rune('0'+a.Segment))
			if time.Since(m.logged[key]) >= cfg.LogEvery {
				m.logged[key] = time.Now()
				m.warnBehind(ctx, a, holders)
			}
		}
	}
	for k := range m.holders {
		if !seen[k] {
			delete(m.holders, k) // gone, or holds it no more
		}
	}
	for slot := range m.overdue {
		if !blocked[slot] {
			delete(m.overdue, slot)
			delete(m.readers, slot)
		}
	}
	if renewed {
		m.endReaders(ctx, held)
	}
	for k := range m.cancels {
		if !seen[k] {
			delete(m.cancels, k)
		}
	}
	if cfg.OnRotate != nil {
		cfg.OnRotate(actions)
	}
	return nil
}

// rotate runs the round's rotation. A reader of the ring's tables holds
// every slot it read until its transaction ends; one that reads in a loop
// of short transactions holds them whenever a NOWAIT comes, and no single
// transaction of it is old enough for RingReaderLimit. So a slot that
// readers have kept from being reclaimed at every round for RotateAfter
// past its time is taken the other way: the round waits for its locks (at
// most readerWait), ahead of the readers' next transactions, and once it
// waits the leader cancels the statements of the readers it named (each
// then fails with SQLSTATE 57014, and a client that retries reads again
// once the reclaim is done). The ring turns whatever readers do; a reader
// loses at most one statement per rotation period.
func (m *Maintainer) rotate(ctx context.Context) ([]storage.RingAction, error) {
	cfg := &m.cfg
	var readers []holder
	for slot, since := range m.overdue {
		if time.Since(since) >= cfg.RotateAfter {
			readers = append(readers, m.readers[slot]...)
		}
	}
	if len(readers) == 0 {
		return cfg.Store.Rotate(ctx, cfg.Term, cfg.RotateAfter, cfg.MaxCarryBytes)
	}
	return cfg.Store.RotateWaiting(ctx, cfg.Term, cfg.RotateAfter, cfg.MaxCarryBytes, readerWait, func(waiter uint32) {
		m.cancelReaders(ctx, waiter, readers)
	})
}

// cancelReaders cancels the statements of those readers (see rotate) that
// block backend waiter now (pg_blocking_pids: a backend named at the last
// round that has moved on to something else is left alone), and says so
// once per LogEvery.
func (m *Maintainer) cancelReaders(ctx context.Context, waiter uint32, readers []holder) {
	var blocking []int32
	if err := m.cfg.Store.Pool.QueryRow(ctx, "SELECT pg_blocking_pids($1)", int32(waiter)).Scan(&blocking); err != nil {
		return
	}
	done := map[int32]bool{}
	for _, h := range readers {
		if done[h.key.pid] || !slices.Contains(blocking, h.key.pid) {
			continue
		}
		done[h.key.pid] = true
		var ended bool
		err := m.cfg.Store.Pool.QueryRow(ctx, "SELECT pg_cancel_backend($1)", h.key.pid).Scan(&ended)
		if err == nil && ended && m.cfg.OnEndReader != nil {
			m.cfg.OnEndReader(h.key.pid, "cancelled")
		}
		key := "overdue" + strconv.Itoa(int(h.key.pid))
		if time.Since(m.logged[key]) < m.cfg.LogEvery {
			continue
		}
		m.logged[key] = time.Now()
		attrs := []any{"pid", h.key.pid, "role", h.role, "application", h.app, "slot", h.key.slot, "rotate_after", m.cfg.RotateAfter}
		if err != nil || !ended {
			m.cfg.Logger.Error("millrace: a reader of the queue's tables keeps a slot from being reclaimed and its statement could not be cancelled (the leader's role needs the same role or pg_signal_backend)",
				append(attrs, "err", err)...)
			continue
		}
		m.cfg.Logger.Warn("millrace: cancelled the statement of a reader of the queue's tables that kept a slot from being reclaimed a rotation period past its time",
			attrs...)
	}
}

// watchHolders describes the backends that action a names as holding its
// slot (a.Holders), and records them in seen. The rotation runs as the schema's owner,
// which cannot see another role's transaction start (pg_stat_activity
// shows it only to members of that role and of pg_read_all_stats): it
// says it cannot see such a holder's transaction start. The leader looks again
// with its own rights and gives each holder its role and its real age
// when visible, else the age of its transaction id or snapshot in
// transactions, and how long this leader has seen it hold the slot.
func (m *Maintainer) watchHolders(ctx context.Context, a storage.RingAction, seen map[holderKey]bool) []holder {
	pids := a.Holders
	if len(pids) == 0 {
		return nil
	}
	rows, err := m.cfg.Store.Pool.Query(ctx, `SELECT a.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, ''),
		a.state, extract(epoch FROM clock_timestamp() - a.xact_start)::float8, a.xact_start::text,
		age(a.backend_xid), age(a.backend_xmin), a.backend_xid::text, a.backend_xmin::text, current_user::text,
		(`+slotsHeldSQL+`)
		FROM pg_stat_activity a WHERE a.pid = ANY($1) ORDER BY a.pid`, pids)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []holder
	now := time.Now()
	for rows.Next() {
		var (
			pid                     int32
			role, app, me           string
			state, start, xid, xmin *string
			open                    *float64
			xidAge, xminAge         *int32
			slots                   int
		)
		if err := rows.Scan(&pid, &role, &app, &state, &open, &start, &xidAge, &xminAge, &xid, &xmin, &me, &slots); err != nil {
			return out
		}
		k := holderKey{pid: pid, slot: a.Segment, xact: deref(start) + "/" + deref(xid) + "/" + deref(xmin)}
		seen[k] = true
		first, ok := m.holders[k]
		if !ok {
			first = now
			m.holders[k] = now
		}
		parts := []string{"role " + role}
		if app != "" {
			parts = append(parts, "application "+strconv.Quote(app))
		}
		if state != nil {
			parts = append(parts, *state)
		}
		if open != nil {
			parts = append(parts, fmt.Sprintf("transaction open %d s", int64(*open)))
		} else {
			switch {
			case xidAge != nil:
				parts = append(parts, fmt.Sprintf("its transaction id is %d transactions old", *xidAge))
			case xminAge != nil:
				parts = append(parts, fmt.Sprintf("its snapshot is %d transactions old", *xminAge))
			}
			parts = append(parts, fmt.Sprintf("seen holding slot %d for %d s", a.Segment, int64(now.Sub(first).Seconds())),
				fmt.Sprintf("its transaction's start is not visible to role %s (grant it pg_read_all_stats to see it)", me))
		}
		h := holder{key: k, role: role, app: app, state: deref(state), age: now.Sub(first), slots: slots}
		if open != nil {
			h.age, h.ageKnown = time.Duration(*open*float64(time.Second)), true
		}
		if slots > 1 {
			parts = append(parts, fmt.Sprintf("it holds %d slots of the ring: a reader of the queue's tables", slots))
			if lim := m.cfg.RingReaderLimit; lim > 0 {
				parts = append(parts, fmt.Sprintf("it is ended once its transaction is %s old (RingReaderLimit)", lim))
			} else {
				parts = append(parts, "storage grows with arrivals until it ends (RingReaderLimit bounds it; it is off)")
			}
		}
		h.desc = fmt.Sprintf("pid %d (%s)", pid, strings.Join(parts, ", "))
		out = append(out, h)
	}
	return out
}

// slotsHeldSQL counts the slots of the ring backend a.pid holds a lock on
// a partition of: partitions of the schema's tables partitioned by slot,
// read from the catalogs (readable by any role).
const slotsHeldSQL = `SELECT count(DISTINCT pg_get_expr(c.relpartbound, c.oid))::int
		FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation
		JOIN pg_inherits i ON i.inhrelid = c.oid
		JOIN pg_partitioned_table p ON p.partrelid = i.inhparent
		JOIN pg_attribute t ON t.attrelid = p.partrelid AND t.attnum = p.partattrs[0]
		WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.granted
		  AND c.relnamespace = 'millrace'::regnamespace AND t.attname = 'slot'`

// endReaders ends, when RingReaderLimit is set, the readers of the ring
// among holders (backends that hold partitions of two slots or more)
// whose transaction is older than the limit: cancelled when running a
// statement (the first time), terminated otherwise. See
// Config.RingReaderLimit.
func (m *Maintainer) endReaders(ctx context.Context, holders []holder) {
	lim := m.cfg.RingReaderLimit
	if lim <= 0 {
		return
	}
	done := map[int32]bool{}
	for _, h := range holders {
		if done[h.key.pid] || h.slots < 2 || h.age < lim {
			continue
		}
		done[h.key.pid] = true
		how, fn := "terminated", "pg_terminate_backend"
		if h.state == "active" && !m.cancels[h.key] {
			how, fn = "cancelled", "pg_cancel_backend"
		}
		attrs := []any{"pid", h.key.pid, "role", h.role, "application", h.app, "state", h.state,
			"transaction_age", h.age.Round(time.Second), "slots_held", h.slots, "ring_reader_limit", lim}
		if !h.ageKnown {
			attrs = append(attrs, "age_is", "how long this leader has seen it hold the ring (its transaction's start is not visible to the leader's role)")
		}
		var ended bool
		err := m.cfg.Store.Pool.QueryRow(ctx, "SELECT "+fn+"($1)", h.key.pid).Scan(&ended)
		if err != nil || !ended {
			key := "reader" + strconv.Itoa(int(h.key.pid))
			if time.Since(m.logged[key]) >= m.cfg.LogEvery {
				m.logged[key] = time.Now()
				m.cfg.Logger.Error("millrace: a reader of the queue's tables has held the ring longer than RingReaderLimit and could not be ended (the leader's role needs the same role or pg_signal_backend)",
					append(attrs, "err", err)...)
			}
			continue
		}
		if how == "cancelled" {
			m.cancels[h.key] = true
		}
		m.cfg.Logger.Error("millrace: "+how+" a reader of the queue's tables that held the ring longer than RingReaderLimit", attrs...)
		if m.cfg.OnEndReader != nil {
			m.cfg.OnEndReader(h.key.pid, how)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// warnBehind logs why the ring could not move and how far behind it is,
// and who holds it back.
func (m *Maintainer) warnBehind(ctx context.Context, a storage.RingAction, holders []holder) {
	attrs := []any{"detail", a.Detail}
	if len(holders) > 0 {
		desc := make([]string, len(holders))
		for i, h := range holders {
			desc[i] = h.desc
		}
		attrs = append(attrs, "holders", strings.Join(desc, "; "))
	}
	if st, err := storage.Ring(ctx, m.cfg.Store.Pool); err == nil {
		attrs = append(attrs, "current_slot", st.Current, "current_for", time.Since(st.Since).Round(time.Second),
			"last_reclaim_ago", time.Since(st.LastReclaim).Round(time.Second))
	}
	m.cfg.Logger.Warn("millrace: rotation is held back", attrs...)
}

// runPeriodic enqueues the due slot of every periodic job: the latest slot
// at or before now that comes after the newest one enqueued (slots missed
// while no leader ran are skipped, not replayed). The database's primary
// key on (name, slot) makes each slot run once across leaders. It returns
// ErrLostLead when the term is over.
func (m *Maintainer) runPeriodic(ctx context.Context) error {
	if len(m.cfg.Periodic) == 0 {
		return nil
	}
	// Slots are decided on the server's clock: a leader whose clock runs
	// fast or slow neither runs a slot early nor records one in the future.
	now, err := m.cfg.Store.Now(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("millrace: reading the server's clock for periodic jobs failed", "err", err)
		}
		return nil
	}
	if m.started.IsZero() {
		m.started = now
	}
	for _, p := range m.cfg.Periodic {
		last, ok := m.last[p.Name]
		if !ok {
			var err error
			if last, err = m.cfg.Store.PeriodicLast(ctx, p.Name); err != nil {
				if ctx.Err() == nil {
					m.cfg.Logger.Warn("millrace: reading periodic job state failed", "name", p.Name, "err", err)
				}
				continue
			}
			if last.IsZero() {
				last = m.started
				if p.RunOnStart {
					last = m.started.Add(-366 * 24 * time.Hour)
				}
			}
			m.last[p.Name] = last
		}
		slot := time.Time{}
		for t, i := p.Schedule.Next(last), 0; !t.IsZero() && !t.After(now) && i < 100000; t, i = p.Schedule.Next(t), i+1 {
			slot = t
		}
		if slot.IsZero() {
			continue
		}
		j, err := p.Job()
		if err != nil {
			m.cfg.Logger.Error("millrace: building periodic job failed", "name", p.Name, "err", err)
			m.last[p.Name] = slot
			continue
		}
		id, inserted, err := m.cfg.Store.PeriodicRun(ctx, m.cfg.Term, p.Name, slot, j)
		if storage.IsFenced(err) {
			return ErrLostLead
		}
		if err != nil {
			if ctx.Err() == nil {
				m.cfg.Logger.Warn("millrace: enqueuing periodic job failed", "name", p.Name, "slot", slot, "err", err)
			}
			continue
		}
		m.last[p.Name] = slot
		if inserted {
			m.cfg.Logger.Debug("millrace: periodic job enqueued", "name", p.Name, "slot", slot, "job", id)
		}
	}
	return nil
}

// Promoter promotes scheduled jobs as they fall due: it sleeps until the
// next due time (at most MaxWait), or until Kick says a job was scheduled
// or a retry queued (NOTIFY millrace_sched), so a job starts within a few
// milliseconds of its time, and a job whose transaction commits after its
// time starts when it commits.
type Promoter struct {
	Store  *storage.Store
	Logger *slog.Logger
	// MaxWait bounds a sleep (default 1s): a job scheduled meanwhile to
	// fall due later than that, or whose transaction committed after its
	// run_at with no notification, is promoted within it. A job scheduled
	// to fall due sooner (an insert, a retry, a snooze) sends NOTIFY
	// millrace_sched, which kicks the promoter; farther ones send none (a
	// NOTIFY serializes commits). An idle round reads two index edges and
	// writes nothing: two calls a second.
	MaxWait time.Duration
	// MinGap spaces promotion rounds (default 10ms): jobs falling due
	// within it are promoted together, bounding rounds to 100 a second.
	MinGap time.Duration
	// CompactMin is the least number of promotions between two compactions
	// of the schedule (default 10000).
	CompactMin int64
	kick       chan struct{}
}

// PromoterWait is the promoter's longest sleep (Promoter.MaxWait): a job
// falling due sooner than this after it is scheduled is announced by a
// NOTIFY on millrace_sched.
const PromoterWait = time.Second

// NewPromoter makes a Promoter.
func NewPromoter(s *storage.Store, logger *slog.Logger) *Promoter {
	if logger == nil {
		logger = slog.Default()
	}
	return &Promoter{Store: s, Logger: logger, MaxWait: PromoterWait, MinGap: 10 * time.Millisecond, CompactMin: 10000,
		kick: make(chan struct{}, 1)}
}

// Kick wakes the promoter now.
func (p *Promoter) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run promotes under leader term term until ctx ends, or until the term
// is over (it returns ErrLostLead).
func (p *Promoter) Run(ctx context.Context, term int64) error {
	for ctx.Err() == nil {
		wait := p.MaxWait
		round := time.Now()
		if _, err := p.Store.Promote(ctx, term, p.CompactMin); storage.IsFenced(err) {
			return ErrLostLead
		} else if err != nil {
			if ctx.Err() == nil {
				p.Logger.Warn("millrace: promoting scheduled jobs failed", "err", err)
			}
		} else if next, err := p.Store.NextDue(ctx); err == nil && !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Until(round.Add(p.MinGap)), time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-p.kick:
			// A schedule changed: promote soon, but not more often than
			// every MinGap.
			if gap := time.Until(round.Add(p.MinGap)); gap > 0 {
				t.Reset(gap)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		case <-t.C:
		}
		t.Stop()
	}
	return ctx.Err()
}

// watchListeners looks, while PostgreSQL's notification queue is in use,
// for backends blocked writing to a client that does not read
// (wait_event ClientWrite): a listener whose process is stopped keeps the
// queue from being emptied. It names each one once it has been blocked at
// every round for ListenerStuckAfter, and ends it if it is the session
// connection of a millrace process (its application_name is
// storage.SessionName of the process). Ending it decides nothing about
// the process: its liveness is its lease, and it connects again if it
// resumes. Seeing another role's wait_event needs the same role or
// pg_read_all_stats; ending its backend, the same role or
// pg_signal_backend.
func (m *Maintainer) watchListeners(ctx context.Context) {
	pool := m.cfg.Store.Pool
	var usage float64
	if err := pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage); err != nil || usage == 0 {
		clear(m.writers)
		return
	}
	rows, err := pool.Query(ctx, `SELECT a.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, ''),
		CASE WHEN starts_with(a.application_name, $1) AND substr(a.application_name, length($1) + 1) ~ '^[0-9]{1,9}$'
		     THEN substr(a.application_name, length($1) + 1)::bigint END
		FROM pg_stat_activity a
		WHERE a.wait_event = 'ClientWrite' AND a.pid <> pg_backend_pid()`, storage.SessionNamePrefix)
	if err != nil {
		return
	}
	type writer struct {
		pid       int32
		role, app string
		process   *int64
	}
	var ws []writer
	for rows.Next() {
		var w writer
		if err := rows.Scan(&w.pid, &w.role, &w.app, &w.process); err != nil {
			rows.Close()
			return
		}
		ws = append(ws, w)
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	now := time.Now()
	seen := map[int32]bool{}
	for _, w := range ws {
		seen[w.pid] = true
		first, ok := m.writers[w.pid]
		if !ok {
			m.writers[w.pid] = now
			continue
		}
		blocked := now.Sub(first)
		if blocked < m.cfg.ListenerStuckAfter {
			continue
		}
		attrs := []any{"pid", w.pid, "role", w.role, "application", w.app, "blocked_for", blocked.Round(time.Second),
			"queue_usage", fmt.Sprintf("%.6f%%", usage*100)}
		if w.process == nil {
			// Not a millrace process: named, at most once per LogEvery.
			key := "listener" + strconv.Itoa(int(w.pid))
			if time.Since(m.logged[key]) >= m.cfg.LogEvery {
				m.logged[key] = now
				m.cfg.Logger.Warn("millrace: a backend has not read what it was sent (a stopped listener keeps the notification queue from being emptied); it is not a millrace process and is left alone", attrs...)
			}
			continue
		}
		attrs = append(attrs, "process", *w.process)
		var ended bool
		if err := pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", w.pid).Scan(&ended); err != nil || !ended {
			key := "listener" + strconv.Itoa(int(w.pid))
			if time.Since(m.logged[key]) >= m.cfg.LogEvery {
				m.logged[key] = now
				m.cfg.Logger.Warn("millrace: a stopped process's session has not read its notifications, and could not be ended (the leader's role needs the same role or pg_signal_backend)",
					append(attrs, "err", err)...)
			}
			continue
		}
		delete(m.writers, w.pid)
		m.cfg.Logger.Warn("millrace: ended the session connection of a process that has not read its notifications (stopped?); its batches go to others once its lease runs out", attrs...)
		if m.cfg.OnEndListener != nil {
			m.cfg.OnEndListener(w.pid)
		}
	}
	for pid := range m.writers {
		if !seen[pid] {
			delete(m.writers, pid) // reads again, or gone
		}
	}
}
