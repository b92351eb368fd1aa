package millrace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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
}

// Config configures a Client. The zero value inserts jobs but works none.
type Config struct {
	// Queues to work, by name, with their worker limits. Several processes
	// may work the same queue.
	Queues map[string]QueueConfig
	// Workers runs the jobs; required when Queues is not empty.
	Workers *Workers
	// Name identifies the process in millrace.process (default host:pid).
	Name string
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
	// notification arrives (default 1s). Notifications are the normal path.
	PollInterval time.Duration
	// RotateAfter is how long a slot of the ring stays current, and how long
	// a slot that left use waits before the leader reclaims it (default
	// 10s). Completed jobs' rows are gone 2 to 3 periods after they finish.
	RotateAfter time.Duration
	// StuckAfter is how long a claimed batch may stay unfinished, its
	// holder alive, before the leader releases it to other claimers (the
	// holder's late acks are then dropped and the jobs run again). It
	// rescues work from a process that is stopped or hung. Default 1h;
	// keep it well above the longest job.
	StuckAfter time.Duration
	// MaxBatchJobs caps the jobs one claim takes (default 1000, and never
	// more than the queue's MaxWorkers): a bulk insert is shared by every
	// process working its queue.
	MaxBatchJobs int
	// MaxBatchBytes caps the bytes of arguments one claim takes (default
	// 8 MiB; a claim takes at least one job).
	MaxBatchBytes int64
	// MaintenanceEvery is the leader's maintenance cadence (default 1s).
	MaintenanceEvery time.Duration
	// OnClaim observes every claim that returned jobs: its duration and size.
	OnClaim func(queue string, d time.Duration, n int)
	// ErrorHandler is told about every failed attempt (an error returned by
	// a worker, or a panic it raised), after the outcome is decided and
	// before it is written. It runs on the worker's goroutine: keep it
	// short. Failed attempts are also logged, at most 10 lines a second.
	ErrorHandler func(ctx context.Context, e *JobError)
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

// InsertOpts are per-job options; nil means defaults.
type InsertOpts struct {
	Queue       string    // default "default"
	Priority    int       // 0..32767, lower runs first within a batch; default 0
	RunAt       time.Time // zero: now
	MaxAttempts int       // default Config.MaxAttempts
}

// Client inserts and works jobs.
type Client struct {
	pool   *pgxpool.Pool
	cfg    Config
	store  *storage.Store
	sender *notifier.Sender

	mu      sync.Mutex
	started bool
	workers *pool.Pool
	cancel  context.CancelFunc
	session *session.Session
}

// DefaultQueue is the queue of jobs inserted without one.
const DefaultQueue = "default"

// ErrArgsTooLarge is returned when a job's encoded arguments exceed
// Config.MaxArgsBytes. Nothing is inserted.
var ErrArgsTooLarge = errors.New("millrace: job arguments too large")

// The defaults of Config, in one place.
const (
	DefaultMaxArgsBytes     = 1 << 20          // Config.MaxArgsBytes
	DefaultMaxAttempts      = 25               // Config.MaxAttempts
	DefaultPollInterval     = time.Second      // Config.PollInterval
	DefaultRotateAfter      = 10 * time.Second // Config.RotateAfter
	DefaultMaintenanceEvery = time.Second      // Config.MaintenanceEvery
	DefaultStuckAfter       = time.Hour        // Config.StuckAfter
	DefaultMaxBatchJobs     = 1000             // Config.MaxBatchJobs
	DefaultMaxBatchBytes    = 8 << 20          // Config.MaxBatchBytes
)

// ErrNotMigrated is returned by Start when the database's schema is
// missing or older than this library: run Migrate (or `millrace migrate
// up`) first.
var ErrNotMigrated = schema.ErrNotMigrated

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
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"PollInterval", cfg.PollInterval}, {"RotateAfter", cfg.RotateAfter}, {"MaintenanceEvery", cfg.MaintenanceEvery}, {"StuckAfter", cfg.StuckAfter}} {
		if d.v < 0 {
			return cfg, fmt.Errorf("millrace: Config.%s must not be negative", d.name)
		}
	}
	if cfg.MaxAttempts < 0 || cfg.MaxAttempts > 1000 {
		return cfg, errors.New("millrace: Config.MaxAttempts must be 1 to 1000 (0: the default)")
	}
	if cfg.MaxArgsBytes < 0 || cfg.MaxBatchJobs < 0 || cfg.MaxBatchBytes < 0 {
		return cfg, errors.New("millrace: Config limits must not be negative")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.PollInterval, DefaultPollInterval)
	def(&cfg.RotateAfter, DefaultRotateAfter)
	def(&cfg.MaintenanceEvery, DefaultMaintenanceEvery)
	def(&cfg.StuckAfter, DefaultStuckAfter)
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s:%d", h, os.Getpid())
	}
	return cfg, nil
}

func NewClient(p *pgxpool.Pool, cfg Config) (*Client, error) {
	if p == nil {
		return nil, errors.New("millrace: NewClient needs a pool")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Client{pool: p, cfg: cfg, store: &storage.Store{Pool: p},
		sender: &notifier.Sender{Pool: p, Window: 2 * time.Millisecond}}, nil
}

// Migrate brings the millrace schema to this version of the library. It is
// safe to call from several processes at once.
func Migrate(ctx context.Context, p *pgxpool.Pool) error {
	_, err := schema.Up(ctx, p, 0)
	return err
}

func (c *Client) newJob(args JobArgs, opts *InsertOpts) (storage.NewJob, error) {
	if args == nil {
		return storage.NewJob{}, errors.New("millrace: insert of nil args")
	}
	j := storage.NewJob{Queue: DefaultQueue, Kind: args.Kind(), MaxAttempts: c.cfg.MaxAttempts}
	priority := 0
	if opts != nil {
		if opts.Queue != "" {
			j.Queue = opts.Queue
		}
		if opts.MaxAttempts != 0 {
			j.MaxAttempts = opts.MaxAttempts
		}
		priority = opts.Priority
		j.RunAt = opts.RunAt
	}
	// The rules and their order are millrace.check_job's: the first rule
	// an input breaks gives the same message on every path.
	if j.Kind == "" || len(j.Kind) > 255 {
		return j, errors.New("millrace: kind must be 1 to 255 bytes")
	}
	if len(j.Queue) > 128 {
		return j, errors.New("millrace: queue must be 1 to 128 bytes")
	}
	b, err := json.Marshal(args)
	if err != nil {
		return j, fmt.Errorf("millrace: encoding args of kind %s: %w", j.Kind, err)
	}
	if len(b) > c.cfg.MaxArgsBytes {
		return j, fmt.Errorf("%w: kind %s is %d bytes encoded, the limit is %d", ErrArgsTooLarge, j.Kind, len(b), c.cfg.MaxArgsBytes)
	}
	j.Args = b
	if priority < 0 || priority > 32767 {
		return j, errors.New("millrace: priority must be 0 to 32767")
	}
	j.Priority = int16(priority)
	if j.MaxAttempts < 1 || j.MaxAttempts > 1000 {
		return j, errors.New("millrace: max_attempts must be 1 to 1000")
	}
	return j, nil
}

// Insert enqueues one job in its own transaction and returns its id. Idle
// workers of the queue are woken by a notification coalesced with others
// sent from this process within a couple of milliseconds.
func (c *Client) Insert(ctx context.Context, args JobArgs, opts *InsertOpts) (int64, error) {
	j, err := c.newJob(args, opts)
	if err != nil {
		return 0, err
	}
	id, err := c.store.Enqueue(ctx, c.pool, j, false)
	if err != nil {
		return 0, err
	}
	c.notify(j.Queue)
	return id, nil
}

// InsertTx enqueues one job inside the caller's transaction: it runs only if
// tx commits. Postgres delivers one NOTIFY per queue when tx commits.
func (c *Client) InsertTx(ctx context.Context, tx pgx.Tx, args JobArgs, opts *InsertOpts) (int64, error) {
	j, err := c.newJob(args, opts)
	if err != nil {
		return 0, err
	}
	return c.store.Enqueue(ctx, tx, j, true)
}

// InsertManyParams is one job of an InsertMany call.
type InsertManyParams struct {
	Args JobArgs
	Opts *InsertOpts
}

// InsertMany enqueues jobs with COPY in one transaction and returns how many
// it inserted. Either all are inserted or none.
func (c *Client) InsertMany(ctx context.Context, jobs []InsertManyParams) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		n, err = c.InsertManyTx(ctx, tx, jobs)
		return err
	})
	return n, err
}

// InsertManyTx is InsertMany inside the caller's transaction.
func (c *Client) InsertManyTx(ctx context.Context, tx pgx.Tx, jobs []InsertManyParams) (int64, error) {
	nj := make([]storage.NewJob, len(jobs))
	for i, p := range jobs {
		j, err := c.newJob(p.Args, p.Opts)
		if err != nil {
			return 0, fmt.Errorf("job %d: %w", i, err)
		}
		nj[i] = j
	}
	ids, err := storage.EnqueueMany(ctx, tx, nj)
	return int64(len(ids)), err
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
// It returns once the process is registered; work goes on until Stop.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("millrace: client already started")
	}
	if err := schema.Check(ctx, c.pool); err != nil {
		return err
	}
	queues := map[string]int{}
	for name, q := range c.cfg.Queues {
		queues[name] = q.MaxWorkers
	}
	var ws *Workers = c.cfg.Workers
	handle := func(ctx context.Context, j *storage.Job) error { return ws.handle(ctx, j) }
	c.workers = pool.New(pool.Config{Store: c.store, Queues: queues, Handle: handle, Logger: c.cfg.Logger,
		Backoff: c.cfg.Backoff, Poll: c.cfg.PollInterval, OnClaim: c.cfg.OnClaim,
		MaxBatchJobs: c.cfg.MaxBatchJobs, MaxBatchBytes: c.cfg.MaxBatchBytes, OnFailure: c.onFailure})
	runCtx, cancel := context.WithCancel(context.Background())
	sess, err := session.Start(ctx, runCtx, session.Config{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cc := c.pool.Config().ConnConfig.Copy()
			// The session connection carries the process's liveness and
			// leader locks: a peer that vanishes without closing it must
			// not hold them for the operating system's default two hours.
			for k, v := range map[string]string{"tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3"} {
				if _, set := cc.RuntimeParams[k]; !set {
					cc.RuntimeParams[k] = v
				}
			}
			return pgx.ConnectConfig(ctx, cc)
		},
		Name: c.cfg.Name, Logger: c.cfg.Logger,
		SetOwner: c.workers.SetOwner, Wake: c.workers.Wake, WakeAll: c.workers.WakeAll,
		Lead: func(ctx context.Context) {
			maint.Run(ctx, maint.Config{Store: c.store, Logger: c.cfg.Logger, Every: c.cfg.MaintenanceEvery,
				RotateAfter: c.cfg.RotateAfter, StuckAfter: c.cfg.StuckAfter})
		},
	})
	if err != nil {
		cancel()
		return err
	}
	c.cancel = cancel
	c.session = sess
	c.started = true
	c.workers.Start()
	return nil
}

func (c *Client) onFailure(j *storage.Job, err error, panicked, discarded bool, retryAt time.Time) {
	if c.cfg.ErrorHandler == nil {
		return
	}
	c.cfg.ErrorHandler(context.Background(), &JobError{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Attempt: j.Attempt + 1,
		MaxAttempts: j.MaxAttempts, Err: err, Panic: panicked, Discarded: discarded, RetryAt: retryAt})
}

// Stop stops claiming and starting jobs at once, waits for running jobs
// until ctx ends, then cancels their contexts and returns by ctx's deadline,
// whatever the jobs do. A job cut short by shutdown is not counted as an
// attempt. Outcomes known by then are written; jobs claimed but not
// finished are released to any process that works their queue.
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
