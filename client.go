package millrace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/maint"
	"github.com/millrace/millrace/internal/notifier"
	"github.com/millrace/millrace/internal/pool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/session"
	"github.com/millrace/millrace/internal/storage"
)

// QueueConfig configures how a Client works one queue.
type QueueConfig struct {
	// MaxWorkers is the number of jobs of this queue the process runs at
	// once.
	MaxWorkers int
	// Limit, when set, is the queue's limits across every process: how
	// many of its jobs may run at once, and start per period (see
	// SetLimit). Start writes them when the database holds others; they
	// are shared by every process of the database and stay until changed,
	// and the newest setting wins, whichever process or operator wrote
	// it. nil leaves the queue's limits as they are; &Limit{} clears them.
	Limit *Limit
}

// Config configures a Client. The zero value inserts jobs but works none.
type Config struct {
	// Queues to work, by name, with their worker limits. Several processes
	// may work the same queue.
	Queues map[string]QueueConfig

	// clock replaces time.Now for the times a worker records (tests of a
	// skewed host: export_test.go).
	clock func() time.Time
	// Workers runs the jobs; required when Queues is not empty.
	Workers *Workers
	// Name identifies the process in millrace.process (default host:pid).
	Name string
	// SessionURL is where the process's session connection goes, when the
	// pool does not reach PostgreSQL directly (a connection pooler such as
	// PgBouncer in transaction mode stands between them). The session
	// connection LISTENs, which needs a server session of its own: through
	// a pooler the LISTEN would stay on a pooled server connection that no
	// client reads. Liveness and leadership are leases renewed through the
	// pool, which may go through the pooler. Empty: the pool's own
	// connection settings. Start fails with ErrThroughPooler if the session
	// connection does not reach a backend of its own. See docs/deploy.md.
	SessionURL string
	// Logger receives the client's logs (default slog.Default()).
	Logger *slog.Logger
	// MaxArgsBytes rejects larger encoded arguments at insert (default 1 MiB).
	MaxArgsBytes int
	// MaxAttempts is the default number of attempts of a job (default 25).
	MaxAttempts int
	// Backoff is the delay before a failed job's next attempt (default
	// 2^attempt seconds with jitter, capped at an hour).
	Backoff func(attempt int) time.Duration
	// PollInterval is the fallback claim interval of an idle queue when no
	// notification arrives (default 1s). Notifications are the normal path:
	// every insert of a job due now (unless it asks for none with the SQL
	// API's p_notify => false), promotion, release, resume and retry sends
	// one, and a process that lost its listening connection claims on
	// every queue once it is back.
	PollInterval time.Duration
	// MaxPollInterval caps the idle queue's fallback poll: after each
	// claim that finds nothing, the wait before the next one doubles from
	// PollInterval up to MaxPollInterval, and a notification or a claim
	// that finds jobs starts it again at PollInterval (default 30s). It
	// is what an idle queue costs: 1,000 idle queues claim about 33 times
	// a second per process instead of 1,000. A job inserted without a
	// notification waits at most this long in an idle queue.
	MaxPollInterval time.Duration
	// RotateAfter is how long a slot of the ring stays current, and how long
	// a slot that left use waits before the leader reclaims it (default
	// 10s). Completed jobs' rows are gone 2 to 3 periods after they finish.
	RotateAfter time.Duration
	// StuckAfter is how long a claimed batch may stay unfinished, its
	// holder alive, before the leader releases it to other claimers (the
	// holder's late acks are then dropped and the jobs run again). It
	// rescues work from a process that is alive but hung. Default 1h;
	// keep it well above the longest job.
	StuckAfter time.Duration
	// ProcessLease is how long this process stays alive in the others'
	// eyes without renewing its lease (default 15s, 1s to 1h); it renews
	// it every seventh of that. A process that is killed, stopped (SIGSTOP,
	// a paused VM), cut off or starved for longer is dead: the leader
	// releases its batches to other claimers (the jobs it was running use
	// an attempt) at most ProcessLease plus a maintenance round after its
	// last renewal. If it comes back, it takes a new identity; the jobs it
	// still runs under the old one are cancelled (ErrIdentityLost) and
	// their outcomes dropped.
	ProcessLease time.Duration
	// LeaderLease is how long the maintenance leader's term lasts without
	// renewal (default 10s, 1s to 1h); the leader renews it at least three
	// times a lease, beside its maintenance rounds, unless a round has run
	// for ten rounds or three leases (stuck). If the leader stops making
	// rounds (killed, stopped, cut off, stuck), another process takes over at most
	// LeaderLease plus a second after its last renewal (about 3 s after
	// it when the leader's process died: its connections closed with it),
	// and the old
	// leader, should it resume, is refused every maintenance step and
	// steps down.
	LeaderLease time.Duration
	// MaxBatchJobs caps the jobs one claim takes (default 1000, and never
	// more than the queue's MaxWorkers): a bulk insert is shared by every
	// process working its queue.
	MaxBatchJobs int
	// MaxBatchBytes caps the bytes of arguments one claim takes, counted
	// as the worker receives them (their JSON text, not their compressed
	// size in storage; default 8 MiB). A claim stops at the job that
	// reaches the cap, so it holds at most the cap plus that one job (the
	// jobs before it hold less than the cap), and it takes at least one
	// job, so a job larger than the cap is still claimed.
	MaxBatchBytes int64
	// MaxCarryBytes bounds what one reclaim of the ring copies forward of
	// the jobs not yet claimed, in bytes as stored (default 16 MiB). A
	// slot whose backlog is larger (a queue nobody works, or one far
	// behind) is reclaimed all the same, its backlog moved once into the
	// park, a partition outside the ring that claims read as they read
	// every slot: a backlog is never copied at every turn of the ring, and
	// never stops it. The park is emptied into the ring once its backlog is
	// mostly claimed (docs/architecture.md). The leader's setting applies.
	MaxCarryBytes int64
	// MaintenanceEvery is the leader's maintenance cadence (default 1s).
	MaintenanceEvery time.Duration
	// RingReaderLimit bounds how long a reader of the queue's tables may
	// keep the ring from being reclaimed (0, the default: no bound). A
	// transaction that read the queue's tables (SELECT count(*) FROM
	// millrace.jobs left open, a long report, a pg_dump) holds every slot
	// it read until it ends: no slot it holds is reclaimed, and storage
	// grows with arrivals meanwhile. The leader names such a reader in a
	// warning at every LogEvery while it holds the ring; with this set, it
	// ends the reader's transaction once it is older than this: a running
	// statement is cancelled (its transaction aborts and lets go of its
	// locks), a session idle in its transaction is terminated, each logged
	// at level Error with its pid, role, application and age. Only
	// backends holding partitions of two slots or more are ended: a write
	// path (an enqueue, CompleteTx) holds only the slot it writes, and a
	// long producer transaction is named, never ended. Ending another
	// role's backend needs the same role or pg_signal_backend
	// (docs/deploy.md). Set it well above your longest legitimate read of
	// the queue's tables.
	RingReaderLimit time.Duration
	// OnClaim observes every claim that returned jobs: its duration and size.
	OnClaim func(queue string, d time.Duration, n int)
	// ErrorHandler is told about every failed attempt (an error returned by
	// a worker, or a panic it raised), after the outcome is decided and
	// before it is written. It runs on the worker's goroutine: keep it
	// short. Failed attempts are also logged, at most 10 lines a second.
	ErrorHandler func(ctx context.Context, e *JobError)
	// StarveAfter is how long the first waiting job of a lower priority
	// may wait before its priority is served ahead of higher ones
	// (default 5s): priorities order the work, and none starves.
	StarveAfter time.Duration
	// CompletedRetention is how long completed jobs stay in history
	// (at most 70h); DiscardedRetention the same for every other finished
	// attempt: failed, snoozed, cancelled and discarded (at most 31 days).
	// Retention is a setting of the database (millrace.set_retention,
	// 24h and 7 days until set), which whoever runs maintenance obeys and
	// cannot shorten: Start sets it when these fields are set and the
	// role may (the schema's owner or millrace_admin, see SetRetention);
	// otherwise it logs that the database's retention applies. 0 leaves
	// it as it is. History goes away by TRUNCATE of whole buckets (2
	// hours for completed, a day for the others), so a row may outlive
	// its retention by up to one bucket.
	CompletedRetention time.Duration
	DiscardedRetention time.Duration
	// Periodic jobs are enqueued by the leader at each slot of their
	// schedule, each slot exactly once whatever the number of processes.
	Periodic []PeriodicJob
	// InsertMiddleware wraps every insert (outermost first); WorkMiddleware
	// wraps every attempt of a job (outermost first). For logging, metrics
	// and tracing.
	InsertMiddleware []InsertMiddleware
	WorkMiddleware   []WorkMiddleware
}

// JobError describes a failed attempt of a job, for Config.ErrorHandler.
type JobError struct {
	ID          int64
	Queue       string
	Kind        string
	Attempt     int // 1 for the first run
	MaxAttempts int
	Err         error
	// Panic is set when the worker panicked (Err holds the value and stack).
	Panic bool
	// Discarded is set when this was the last attempt; otherwise the job
	// runs again at RetryAt.
	Discarded bool
	RetryAt   time.Time
}

// Client inserts and works jobs.
type Client struct {
	db     *pgxpool.Pool // the application's connection pool, given to NewClient
	cfg    Config
	store  *storage.Store
	sender *notifier.Sender

	events events

	mu      sync.Mutex
	started bool
	workers *pool.Pool // the worker pool that runs the jobs (set by Start)
	cancel  context.CancelFunc
	session *session.Session
	base    context.Context // Start's ctx without its end: its values reach every job
}

// DefaultQueue is the queue of jobs inserted without one.
const DefaultQueue = "default"

// ErrArgsTooLarge is returned when a job's encoded arguments exceed
// Config.MaxArgsBytes. Nothing is inserted.
var ErrArgsTooLarge = errors.New("millrace: job arguments too large")

// The defaults of Config, in one place.
const (
	DefaultMaxArgsBytes       = 1 << 20            // Config.MaxArgsBytes
	DefaultMaxAttempts        = 25                 // Config.MaxAttempts
	DefaultPollInterval       = time.Second        // Config.PollInterval
	DefaultMaxPollInterval    = 30 * time.Second   // Config.MaxPollInterval
	DefaultRotateAfter        = 10 * time.Second   // Config.RotateAfter
	DefaultMaintenanceEvery   = time.Second        // Config.MaintenanceEvery
	DefaultStuckAfter         = time.Hour          // Config.StuckAfter
	DefaultProcessLease       = 15 * time.Second   // Config.ProcessLease
	DefaultLeaderLease        = 10 * time.Second   // Config.LeaderLease
	DefaultMaxBatchJobs       = 1000               // Config.MaxBatchJobs
	DefaultMaxBatchBytes      = 8 << 20            // Config.MaxBatchBytes
	DefaultMaxCarryBytes      = 16 << 20           // Config.MaxCarryBytes
	DefaultStarveAfter        = 5 * time.Second    // Config.StarveAfter
	DefaultCompletedRetention = 24 * time.Hour     // the database's retention until an administrator sets it
	DefaultDiscardedRetention = 7 * 24 * time.Hour // the same, for every other finished attempt
)

// ErrNotMigrated is returned by Start when the database's schema is
// missing or older than this library: run Migrate (or `millrace migrate
// up`) first.
var ErrNotMigrated = schema.ErrNotMigrated

// ErrThroughPooler is returned by Start when the session connection goes
// through a connection pooler: set Config.SessionURL to reach PostgreSQL
// directly (docs/deploy.md).
var ErrThroughPooler = session.ErrThroughPooler

// withDefaults checks cfg and fills in the defaults of every unset field.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Queues) > 0 && cfg.Workers == nil {
		return cfg, errors.New("millrace: Config.Queues is set but Config.Workers is nil")
	}
	for name, q := range cfg.Queues {
		if name == "" || len(name) > 128 {
			return cfg, fmt.Errorf("millrace: queue name %q: queue must be 1 to 128 bytes", name)
		}
		if q.MaxWorkers < 1 {
			return cfg, fmt.Errorf("millrace: queue %q: MaxWorkers must be at least 1", name)
		}
		if err := q.Limit.check(); err != nil {
			return cfg, fmt.Errorf("millrace: queue %q: Limit: %w", name, err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"PollInterval", cfg.PollInterval}, {"MaxPollInterval", cfg.MaxPollInterval}, {"RotateAfter", cfg.RotateAfter}, {"MaintenanceEvery", cfg.MaintenanceEvery},
		{"StuckAfter", cfg.StuckAfter}, {"StarveAfter", cfg.StarveAfter}, {"CompletedRetention", cfg.CompletedRetention},
		{"DiscardedRetention", cfg.DiscardedRetention}, {"ProcessLease", cfg.ProcessLease}, {"LeaderLease", cfg.LeaderLease}} {
		if d.v < 0 {
			return cfg, fmt.Errorf("millrace: Config.%s must not be negative", d.name)
		}
	}
	if cfg.MaxAttempts < 0 || cfg.MaxAttempts > 1000 {
		return cfg, errors.New("millrace: Config.MaxAttempts must be 1 to 1000 (0: the default)")
	}
	if cfg.MaxArgsBytes < 0 || cfg.MaxBatchJobs < 0 || cfg.MaxBatchBytes < 0 || cfg.MaxCarryBytes < 0 {
		return cfg, errors.New("millrace: Config limits must not be negative")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.PollInterval, DefaultPollInterval)
	def(&cfg.MaxPollInterval, max(DefaultMaxPollInterval, cfg.PollInterval))
	if cfg.MaxPollInterval < cfg.PollInterval {
		return cfg, errors.New("millrace: Config.MaxPollInterval must not be less than Config.PollInterval")
	}
	def(&cfg.RotateAfter, DefaultRotateAfter)
	def(&cfg.MaintenanceEvery, DefaultMaintenanceEvery)
	def(&cfg.StuckAfter, DefaultStuckAfter)
	def(&cfg.StarveAfter, DefaultStarveAfter)
	def(&cfg.ProcessLease, DefaultProcessLease)
	def(&cfg.LeaderLease, DefaultLeaderLease)
	for _, l := range []struct {
		name string
		v    time.Duration
	}{{"ProcessLease", cfg.ProcessLease}, {"LeaderLease", cfg.LeaderLease}} {
		if l.v < time.Second || l.v > time.Hour {
			return cfg, fmt.Errorf("millrace: Config.%s must be 1s to 1h", l.name)
		}
	}
	if cfg.CompletedRetention > 70*time.Hour {
		return cfg, errors.New("millrace: Config.CompletedRetention must be at most 70h")
	}
	if cfg.DiscardedRetention > 31*24*time.Hour {
		return cfg, errors.New("millrace: Config.DiscardedRetention must be at most 31 days")
	}
	for i, pj := range cfg.Periodic {
		if err := pj.check(); err != nil {
			return cfg, fmt.Errorf("millrace: Config.Periodic[%d]: %w", i, err)
		}
	}
	if cfg.SessionURL != "" {
		if _, err := pgx.ParseConfig(cfg.SessionURL); err != nil {
			return cfg, fmt.Errorf("millrace: Config.SessionURL: %w", err)
		}
	}
	if cfg.MaxArgsBytes == 0 {
		cfg.MaxArgsBytes = DefaultMaxArgsBytes
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxBatchJobs == 0 {
		cfg.MaxBatchJobs = DefaultMaxBatchJobs
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.MaxCarryBytes == 0 {
		cfg.MaxCarryBytes = DefaultMaxCarryBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s:%d", h, os.Getpid())
	}
	return cfg, nil
}

// NewClient makes a client on pool p. It checks cfg and fills in its
// defaults; it does not touch the database until Start (or an insert).
func NewClient(p *pgxpool.Pool, cfg Config) (*Client, error) {
	if p == nil {
		return nil, errors.New("millrace: NewClient needs a pool")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Client{db: p, cfg: cfg, store: &storage.Store{Pool: p},
		sender: &notifier.Sender{Pool: p, Window: 2 * time.Millisecond}}, nil
}

// Migrate brings the millrace schema to this version of the library. It is
// safe to call from several processes at once.
func Migrate(ctx context.Context, p *pgxpool.Pool) error {
	_, err := schema.Up(ctx, p, 0)
	return err
}

func (c *Client) notify(queue string) {
	c.mu.Lock()
	w := c.workers
	c.mu.Unlock()
	if w != nil {
		w.Wake(queue) // a local worker need not wait for the round trip
	}
	c.sender.Notify(queue)
}

// Start begins working the configured queues: it registers the process,
// listens for notifications, and competes for the maintenance leader role.
// It returns once the process is registered; work goes on until Stop. On
// a hot standby it returns ErrStandby at once: point the pool at the
// primary. ctx bounds Start itself; its values (a trace, a logger, an
// application's dependencies) reach every job's context and ErrorHandler,
// and its end does not stop the client: Stop does.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("millrace: client already started")
	}
	// A standby refuses every write: say so, before its read-only
	// transaction refuses the registration.
	if err := c.refuseStandby(ctx); err != nil {
		return err
	}
	if err := schema.Check(ctx, c.db); err != nil {
		return err
	}
	if err := c.applyRetention(ctx); err != nil {
		return err
	}
	if err := c.applyLimits(ctx); err != nil {
		return err
	}
	queues := map[string]int{}
	for name, q := range c.cfg.Queues {
		queues[name] = q.MaxWorkers
	}
	ws := c.cfg.Workers
	handle := c.wrapWork(ws.handle)
	var sess *session.Session
	fresh := func() bool { return sess == nil || sess.Fresh() }
	c.workers = pool.New(pool.Config{Store: c.store, Queues: queues, Handle: handle, Logger: c.cfg.Logger,
		Backoff: c.cfg.Backoff, Poll: c.cfg.PollInterval, MaxPoll: c.cfg.MaxPollInterval, OnClaim: c.cfg.OnClaim,
		MaxBatchJobs: c.cfg.MaxBatchJobs, MaxBatchBytes: c.cfg.MaxBatchBytes, OnFailure: c.onFailure,
		Policy: ws.policy, OnAcked: c.onAcked, Starve: c.cfg.StarveAfter, Fresh: fresh, Now: c.cfg.clock,
		OnDeferred: c.sender.NotifySched})
	periodic, err := c.periodicJobs()
	if err != nil {
		c.cfg.Logger.Error("millrace: periodic jobs not run", "err", err)
	}
	leader := maint.NewLeader(maint.Config{Store: c.store, Logger: c.cfg.Logger, Every: c.cfg.MaintenanceEvery,
		RotateAfter: c.cfg.RotateAfter, StuckAfter: c.cfg.StuckAfter, MaxCarryBytes: c.cfg.MaxCarryBytes,
		Periodic: periodic, LeaderLease: c.cfg.LeaderLease, RingReaderLimit: c.cfg.RingReaderLimit, Announce: c.notify})
	// The client runs until Stop, whatever ctx does; ctx's values reach
	// its jobs (and ErrorHandler).
	c.base = context.WithoutCancel(ctx)
	runCtx, cancel := context.WithCancel(c.base)
	sess, err = session.Start(ctx, runCtx, session.Config{
		Store: c.store, ProcessLease: c.cfg.ProcessLease, LeaderLease: c.cfg.LeaderLease,
		Lost: func(old int32) {
			if n := c.workers.Abandon(old); n > 0 {
				c.cfg.Logger.Warn("millrace: jobs of the lost identity were cancelled; they run again elsewhere", "jobs", n)
			}
		},
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			// The session sets what it needs (TCP keepalives, no idle
			// timeout) with statements once connected, not as startup
			// parameters: see session.Prepare.
			if c.cfg.SessionURL != "" {
				cc, err := pgx.ParseConfig(c.cfg.SessionURL)
				if err != nil {
					return nil, fmt.Errorf("millrace: Config.SessionURL: %w", err)
				}
				conn, err := pgx.ConnectConfig(ctx, cc)
				if err == nil {
					if err = sessionOnStandby(conn); err != nil {
						conn.Close(ctx)
						return nil, err
					}
				}
				return conn, err
			}
			return pgx.ConnectConfig(ctx, c.db.Config().ConnConfig.Copy())
		},
		Name: c.cfg.Name, Logger: c.cfg.Logger,
		SetOwner: c.workers.SetOwner, WakeAll: c.workers.WakeAll,
		Notify: func(channel, payload string, pid uint32) {
			switch channel {
			case notifier.SchedChannel:
				// An insert names when its soonest scheduled job falls due
				// (microseconds since the epoch, the server's time); a
				// retry or a snooze names nothing.
				if us, err := strconv.ParseInt(payload, 10, 64); err == nil {
					leader.KickAt(time.UnixMicro(us))
				} else {
					leader.Kick()
				}
			case notifier.CancelChannel:
				if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
					c.workers.CancelJob(id)
				}
			default:
				// This process's own announcement comes back too: its
				// workers were woken when the jobs were inserted (notify),
				// and a second wake would only make them claim again,
				// finding nothing (at 800 jobs/s, most empty claims).
				// When the pool goes through a pooler (SessionURL set), a
				// backend's process id says nothing about which client
				// sent: every notification wakes.
				// Every process working the queue hears it; one that keeps
				// losing them to others answers after its yield.
				if c.cfg.SessionURL != "" || !c.sender.Own(pid) {
					c.workers.WakeRemote(payload)
				}
			}
		},
		Lead: leader.Lead,
	})
	if err != nil {
		cancel()
		return err
	}
	c.cancel = cancel
	c.session = sess
	c.started = true
	c.workers.Start(ctx)
	return nil
}

// applyRetention sets the database's history retention to the one
// configured, if any. A role that may not (a worker) is told so in the
// log, with the retention that applies.
func (c *Client) applyRetention(ctx context.Context) error {
	if c.cfg.CompletedRetention == 0 && c.cfg.DiscardedRetention == 0 {
		return nil
	}
	_, _, err := storage.SetRetention(ctx, c.db, c.cfg.CompletedRetention, c.cfg.DiscardedRetention)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		completed, other, rerr := storage.Retention(ctx, c.db)
		c.cfg.Logger.Warn("millrace: Config.CompletedRetention and DiscardedRetention not applied: history's retention is "+
			"an administrator's setting (millrace.SetRetention, as millrace_admin); the database's applies",
			"completed", completed, "discarded", other, "err", errors.Join(err, rerr))
		return nil
	}
	if err != nil {
		return fmt.Errorf("millrace: setting history's retention: %w", err)
	}
	return nil
}

// applyLimits writes the queues' configured limits where the database
// holds others.
func (c *Client) applyLimits(ctx context.Context) error {
	var want []string
	for name, q := range c.cfg.Queues {
		if q.Limit != nil {
			want = append(want, name)
		}
	}
	if len(want) == 0 {
		return nil
	}
	have, err := storage.QueueLimits(ctx, c.db)
	if err != nil {
		return fmt.Errorf("millrace: reading the queues' limits: %w", err)
	}
	cur := map[string]storage.Limit{}
	for _, l := range have {
		cur[l.Queue] = l.Limit
	}
	for _, name := range want {
		if l := c.cfg.Queues[name].Limit.storage(); !l.Equal(cur[name]) {
			if err := storage.SetLimit(ctx, c.db, name, l); err != nil {
				return fmt.Errorf("millrace: queue %q: setting its Limit: %w", name, err)
			}
		}
	}
	return nil
}

// onAcked runs after each flush commits: it publishes the acks to
// subscribers and, when one is a retry or a snooze due before the
// leader's promoter would look again, asks the Sender for a NOTIFY on
// millrace_sched naming the soonest one's due time on the server's clock
// (its RetryAt plus the flush's shift): the promoter then runs a round at
// that time, and none before it only to read it. The flush itself
// notifies no one: a NOTIFY in its transaction held the server's
// notification lock through its commit's WAL flush, and every other
// notifying commit (inserts, cancels, the Sender's) waited behind it.
func (c *Client) onAcked(acks []storage.Ack, shift time.Duration) {
	c.events.publishAcks(acks)
	now := time.Now()
	if c.cfg.clock != nil {
		now = c.cfg.clock() // the clock the retry's time was read from
	}
	var soonest time.Time
	for _, a := range acks {
		if (a.State == storage.AckRetried || a.State == storage.AckSnoozed) && a.RetryAt.Sub(now) < maint.PromoterWait &&
			(soonest.IsZero() || a.RetryAt.Before(soonest)) {
			soonest = a.RetryAt
		}
	}
	if !soonest.IsZero() {
		c.sender.NotifySchedAt(soonest.Add(shift))
	}
}

func (c *Client) onFailure(j *storage.Job, err error, panicked, discarded bool, retryAt time.Time) {
	if c.cfg.ErrorHandler == nil {
		return
	}
	c.cfg.ErrorHandler(c.base, &JobError{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Attempt: j.Attempt + 1,
		MaxAttempts: j.MaxAttempts, Err: err, Panic: panicked, Discarded: discarded, RetryAt: retryAt})
}

// Leader says whether this process is the maintenance leader now (it
// rotates the ring, promotes scheduled jobs, rescues batches and enqueues
// periodic jobs).
func (c *Client) Leader() bool {
	c.mu.Lock()
	s := c.session
	c.mu.Unlock()
	return s != nil && s.Leading()
}

// Stop stops claiming and starting jobs at once and waits for running
// jobs. A little before ctx's deadline (a fifth of the time Stop was
// given, at most two seconds) it cancels their contexts, so that jobs that
// honour their context return in time; Stop returns by the deadline
// whatever the jobs do, and nil if every job returned by then. Without a
// deadline, it cancels the jobs' contexts when ctx ends. A job cut short
// by shutdown is not counted as an attempt. Outcomes known by then are
// written; jobs claimed but not finished are released to any process that
// works their queue.
func (c *Client) Stop(ctx context.Context) error {
	return c.stop(ctx, false)
}

// StopAndCancel is Stop that cancels the context of every running job at
// once instead of waiting for them.
func (c *Client) StopAndCancel(ctx context.Context) error {
	return c.stop(ctx, true)
}

func (c *Client) stop(ctx context.Context, cancelJobs bool) error {
	c.mu.Lock()
	if !c.started {
		c.mu.Unlock()
		return nil
	}
	c.started = false
	c.mu.Unlock()
	var err error
	if cancelJobs {
		err = c.workers.StopAndCancel(ctx)
	} else {
		err = c.workers.Stop(ctx)
	}
	c.cancel()
	closed := make(chan struct{})
	go func() {
		<-c.session.Done()
		c.sender.Close() // waits for NOTIFYs under way
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	return err
}
