// Package maint runs the protocol's maintenance in the leader process, at
// maintenance cadence, one file per duty: the leader's term and its wiring
// (leader.go), the round as a table of steps (round.go), promotion of the
// scheduled jobs that are due (promote.go), rescue of the batches of dead
// or stuck holders (rescue.go), periodic jobs (periodic.go), listeners
// that do not read (listeners.go), the tally of history counts (tally.go),
// history's expiry (expire.go), rotation and reclaim of the ring
// (rotate.go), the backends that hold a slot back (holders.go) and the
// readers of the ring the leader ends (readers.go).
//
// Leader is what a client's session runs for each leader term it wins
// (Client.Start makes one and hands its Lead to the session): the rounds
// (Run) and, beside them, a Promoter under the same term. Run renews the
// term beside the rounds too, and runs a round (Step) every Config.Every.
// A round runs its steps in this order:
//
//   - renew the leader term;
//   - promote the scheduled jobs that are due, unless a Promoter runs;
//   - rescue: release the batches whose holder is dead (its process
//     lease ran out) or stuck to any claimer, charging an attempt to the
//     jobs it was running;
//   - enqueue the due slot of each periodic job;
//   - watch the backends that do not read what they are sent while the
//     notification queue is in use, and end the session connection of a
//     stopped millrace process;
//   - tally history counts (at most once per TallyEvery);
//   - expire history past its retention (about once a minute);
//   - rotate and reclaim the ring, name the backends that hold back a
//     slot it could not reclaim, cancel the statements of readers that
//     kept a slot a rotation period past its time, and end the readers
//     RingReaderLimit bounds.
//
// Every step that writes passes the leader's term; the first refused for
// it (the term is over: ErrLostLead) ends the round and the loop, in one
// place (Step). Nothing here runs per job, and no statement is written
// here: each is a method of internal/storage.
package maint

import (
	"log/slog"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Config configures the maintenance loop.
type Config struct {
	// Store sends the maintenance's statements.
	Store *storage.Store
	// Logger says what the leader did and what holds it back (default
	// slog.Default()).
	Logger *slog.Logger
	// Announce tells the queue's claimers, in every process, that the
	// promoter moved jobs into queue, once its round has committed (the
	// client's notify: its own workers at once, the others by a NOTIFY).
	// Nil: a NOTIFY from the store.
	Announce func(queue string)
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
	// A transaction that has read the queue's partitioned tables (a count
	// of the view millrace.jobs, a report, a pg_dump) holds a lock on a
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
	// OnEndReader observes each reader of the ring ended (Cancelled or
	// Terminated), by RingReaderLimit or because it kept a slot past its
	// time (for tests).
	OnEndReader func(pid int32, how Ended)
}

// defaults fills in what cfg leaves out.
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

// Maintainer is one leader's maintenance state (what it logged when, and
// what it has seen across rounds).
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

// New makes a Maintainer whose Step tests can call directly.
func New(cfg Config) *Maintainer {
	cfg.defaults()
	return &Maintainer{cfg: cfg, logged: map[string]time.Time{}, last: map[string]time.Time{},
		holders: map[holderKey]time.Time{}, writers: map[int32]time.Time{}, cancels: map[holderKey]bool{},
		overdue: map[int16]time.Time{}, readers: map[int16][]holder{}}
}

// logEvery says whether the line of kind key may be logged now (at most
// once per LogEvery), and if so records that it is.
func (m *Maintainer) logEvery(key string) bool {
	if time.Since(m.logged[key]) < m.cfg.LogEvery {
		return false
	}
	m.logged[key] = time.Now()
	return true
}
