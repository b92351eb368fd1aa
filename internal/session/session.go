// Package session is a client process's presence in the database: its
// identity and liveness (a lease renewed by heartbeats), its leadership (a
// leader term taken over when the last one ran out, renewed by the
// leader's maintenance rounds), and one long-lived connection that LISTENs
// for notifications and is simply reconnected when it fails. Liveness and
// leadership go through the pool and do not depend on any connection: a
// connection closed by the server or held by a pooler changes neither.
package session

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/notifier"
	"github.com/millrace/millrace/internal/storage"
)

// Register records a new client process whose lease lasts lease and
// returns its id (millrace.register). The process stays alive while it
// renews its lease (storage.Store.Beat); a process never reuses its id.
func Register(ctx context.Context, s *storage.Store, name string, lease time.Duration) (int32, error) {
	host, _ := os.Hostname()
	return s.Register(ctx, name, host, os.Getpid(), lease)
}

// ErrThroughPooler is returned when the session connection does not reach
// a PostgreSQL backend of its own: a connection pooler stands between
// them. The session LISTENs, which a pooler in transaction mode would
// leave on a pooled backend that no client reads (notifications missed,
// and PostgreSQL's notification queue held back by that backend).
// Liveness and leadership are leases renewed through the pool, which may
// go through a pooler.
var ErrThroughPooler = errors.New("millrace: the session connection goes through a connection pooler (its backend's process id differs from the one it reported at startup); it must reach PostgreSQL directly: set Config.SessionURL")

// Prepare applies the session connection's settings to conn, whatever
// the role's or database's defaults (storage.SetSessionSettings: no
// timeouts, READ COMMITTED, TCP keepalives), and checks that conn has a
// backend of its own.
func Prepare(ctx context.Context, conn *pgx.Conn) error {
	backend, err := storage.SetSessionSettings(ctx, conn)
	if err != nil {
		return err
	}
	if uint32(backend) != conn.PgConn().PID() {
		return ErrThroughPooler
	}
	return nil
}

// Label names conn, in pg_stat_activity, as the session connection of
// process id (its application_name: storage.SessionName), so that a leader
// can tell a millrace process's session from another backend.
func Label(ctx context.Context, conn *pgx.Conn, id int32) error {
	return storage.LabelSession(ctx, conn, id)
}

// Config configures a Session.
type Config struct {
	// Connect opens a new connection for notifications (LISTEN).
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Store carries registration, heartbeats and leadership (through the
	// pool: none of them needs a session of its own).
	Store *storage.Store
	// Name is the process name recorded in millrace.process.
	Name   string
	Logger *slog.Logger
	// ProcessLease is how long the process stays alive in others' eyes
	// without a heartbeat (default storage.DefaultProcessLease); it beats
	// every seventh of it.
	ProcessLease time.Duration
	// LeaderLease is how long a leader term lasts without renewal (default
	// storage.DefaultLeaderLease). A process that does not lead tries to
	// take over every second, or every tenth of it if that is shorter.
	LeaderLease time.Duration
	// SetOwner is told each identity the session registers (0 while it has
	// none).
	SetOwner func(id int32)
	// Lost is told an identity the process lost: its lease ran out (the
	// process was stopped, cut off or starved for longer than its lease),
	// so others may have taken its batches. What still runs under it must
	// stop; its batches were released when Lost is called.
	Lost func(old int32)
	// Notify is called with the channel, payload and sending backend's
	// process id of every notification; WakeAll after a reconnect
	// (notifications may have been missed).
	Notify  func(channel, payload string, pid uint32)
	WakeAll func()
	// Lead runs the leader's maintenance as process owner under leader
	// term term until ctx ends or the term is over; it is started when
	// this process takes a term.
	Lead func(ctx context.Context, owner int32, term int64)
}

// Session is a running process presence.
type Session struct {
	cfg      Config
	done     chan struct{}
	id       atomic.Int32 // the identity registered now
	lastBeat atomic.Int64 // unix nanoseconds of the last renewal of the lease that succeeded
	leading  atomic.Bool
	term     atomic.Int64
	labelled int32 // the identity the session connection is labelled with (supervise's own)
}

// Leading says whether this process holds a leader term now.
func (s *Session) Leading() bool { return s.leading.Load() }

// ID is the process identity registered now.
func (s *Session) ID() int32 { return s.id.Load() }

// Fresh says the process's lease was renewed within the last half of its
// length: a process that was stopped or cut off for longer does not claim
// work until a heartbeat tells it whether it is still alive.
func (s *Session) Fresh() bool {
	return time.Since(time.Unix(0, s.lastBeat.Load())) < s.cfg.ProcessLease/2
}

// Start connects the session connection (it fails with ErrThroughPooler
// when that goes through a pooler), registers an identity, then keeps the
// process's presence in the background until runCtx ends. It returns once
// the identity is registered.
func Start(ctx context.Context, runCtx context.Context, cfg Config) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ProcessLease <= 0 {
		cfg.ProcessLease = storage.DefaultProcessLease
	}
	if cfg.LeaderLease <= 0 {
		cfg.LeaderLease = storage.DefaultLeaderLease
	}
	if cfg.Lost == nil {
		cfg.Lost = func(int32) {}
	}
	s := &Session{cfg: cfg, done: make(chan struct{})}
	// The session connection first: a process that cannot listen is not
	// registered.
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	id, err := Register(ctx, cfg.Store, cfg.Name, cfg.ProcessLease)
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	s.lastBeat.Store(time.Now().UnixNano())
	s.id.Store(id)
	cfg.SetOwner(id)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.supervise(runCtx, conn) }()
	go func() { defer wg.Done(); s.leases(runCtx) }()
	go func() { wg.Wait(); close(s.done) }()
	return s, nil
}

// Done is closed when the session has ended (its run context ended).
func (s *Session) Done() <-chan struct{} { return s.done }

// connect opens the session connection and prepares it (Prepare).
func (s *Session) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := s.cfg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := Prepare(ctx, conn); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

// supervise keeps the session connection alive: when it fails (the server
// closed it, the network), it connects again at once. The process's
// identity does not change: liveness is a lease, not a connection.
func (s *Session) supervise(ctx context.Context, conn *pgx.Conn) {
	var logged time.Time
	for {
		err := notifier.Listen(ctx, conn, time.Second, s.cfg.Notify, s.tick)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.labelled = 0
		// Logged at most once a minute (a server or middlebox that keeps
		// closing it would fill the log).
		logging := time.Since(logged) >= time.Minute
		if logging {
			logged = time.Now()
			s.cfg.Logger.Warn("millrace: lost the session connection; connecting again", "process", s.id.Load(), "err", err)
		}
		backoff := time.Duration(0) // the first attempt at once: notifications are missed meanwhile
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var cerr error
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			conn, cerr = s.connect(cctx)
			cancel()
			if cerr == nil {
				break
			}
			if errors.Is(cerr, ErrThroughPooler) {
				s.cfg.Logger.Error("millrace: the session connection goes through a pooler; the process cannot listen", "err", cerr)
			}
			backoff = min(max(backoff*2, 100*time.Millisecond), 5*time.Second)
		}
		if logging {
			s.cfg.Logger.Info("millrace: session connection restored; the process keeps its identity (its liveness is its lease, not a connection)",
				"process", s.id.Load())
		}
		s.cfg.WakeAll()
	}
}

// tick runs on the session connection every second: it labels the
// connection with the process's identity when that changed (Label), and
// otherwise runs a cheap statement, so that the connection is never idle
// for long (a middlebox's idle timeout) and a connection that is gone is
// noticed within a second, not when TCP gives up.
func (s *Session) tick(ctx context.Context, conn *pgx.Conn) error {
	if id := s.id.Load(); id != s.labelled {
		if err := Label(ctx, conn, id); err != nil {
			return err
		}
		s.labelled = id
		return nil
	}
	return conn.Ping(ctx)
}

// leases renews the process's lease every seventh of its length and, while
// the process does not lead, tries to take over leadership every second
// (or every tenth of the leader lease). On exit it resigns a term it
// holds, so that another process takes over at once.
func (s *Session) leases(ctx context.Context) {
	beatEvery := max(s.cfg.ProcessLease/7, 50*time.Millisecond)
	tryEvery := min(time.Second, max(s.cfg.LeaderLease/10, 50*time.Millisecond))
	nextBeat := time.Now().Add(beatEvery)
	nextTry := time.Now()
	var leadDone chan struct{}
	var cancelLead context.CancelFunc
	defer func() {
		if leadDone == nil {
			return
		}
		cancelLead()
		<-leadDone
		if s.cfg.Lead != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := s.cfg.Store.Resign(rctx, s.id.Load(), s.term.Load()); err != nil {
				s.cfg.Logger.Debug("millrace: resigning the leader term failed; another process takes over when it runs out", "err", err)
			}
			cancel()
		}
	}()
	for {
		if leadDone != nil {
			select {
			case <-leadDone:
				leadDone = nil
				cancelLead()
				s.leading.Store(false)
				nextTry = time.Now() // another term may be free now
			default:
			}
		}
		now := time.Now()
		if !now.Before(nextBeat) {
			nextBeat = now.Add(beatEvery)
			s.beat(ctx)
		}
		if leadDone == nil && s.cfg.Lead != nil && !now.Before(nextTry) {
			nextTry = now.Add(tryEvery)
			if term := s.tryLead(ctx); term != 0 {
				leadDone, cancelLead = s.startLead(ctx, term)
			}
		}
		wait := time.Until(nextBeat)
		if leadDone == nil && s.cfg.Lead != nil {
			wait = min(wait, time.Until(nextTry))
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-leadDone: // nil while not leading: never ready
		case <-t.C:
		}
		t.Stop()
	}
}

// startLead runs the leader's maintenance under term in the background;
// done is closed when it returns.
func (s *Session) startLead(ctx context.Context, term int64) (done chan struct{}, cancel context.CancelFunc) {
	lctx, cancel := context.WithCancel(ctx)
	done = make(chan struct{})
	owner := s.id.Load()
	s.term.Store(term)
	s.leading.Store(true)
	go func() {
		defer close(done)
		s.cfg.Lead(lctx, owner, term)
	}()
	return done, cancel
}

// beat renews the lease; when the server says the identity is dead (its
// lease ran out: the process was stopped or cut off for longer), the
// process takes a new identity and gives up what the old one held.
func (s *Session) beat(ctx context.Context) {
	id := s.id.Load()
	bctx, cancel := context.WithTimeout(ctx, s.cfg.ProcessLease/2)
	ok, err := s.cfg.Store.Beat(bctx, id, s.cfg.ProcessLease)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("millrace: renewing the process lease failed", "process", id, "err", err)
		}
		return
	}
	if ok {
		s.lastBeat.Store(time.Now().UnixNano())
		return
	}
	s.cfg.Logger.Warn("millrace: this process's lease ran out (it was stopped, cut off or starved for longer than its lease); its batches go to others and it registers again",
		"process", id, "lease", s.cfg.ProcessLease)
	s.cfg.SetOwner(0)
	backoff := 100 * time.Millisecond
	for {
		nid, err := Register(ctx, s.cfg.Store, s.cfg.Name, s.cfg.ProcessLease)
		if err == nil {
			s.lastBeat.Store(time.Now().UnixNano())
			if _, err := s.cfg.Store.Release(ctx, id); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("millrace: releasing the batches of the lost identity failed; the leader releases them", "err", err)
			}
			s.cfg.Lost(id)
			s.id.Store(nid)
			s.cfg.SetOwner(nid)
			s.cfg.WakeAll()
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("millrace: registering again failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// tryLead tries to take a leader term; it returns it, or 0.
func (s *Session) tryLead(ctx context.Context) int64 {
	if !s.Fresh() {
		return 0 // not sure to be alive: the server would refuse anyway
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	term, err := s.cfg.Store.Lead(tctx, s.id.Load(), 0, s.cfg.LeaderLease)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Debug("millrace: trying to lead failed", "err", err)
		}
		return 0
	}
	if term != 0 {
		s.cfg.Logger.Info("millrace: this process leads", "process", s.id.Load(), "term", term, "lease", s.cfg.LeaderLease)
	}
	return term
}
