// Package session is a client process's presence in the database: one
// long-lived connection that carries its identity (a session advisory lock
// the leader reads to tell a dead process from a slow one), LISTENs for
// notifications, competes for the maintenance leader lock, and, when the
// connection fails, registers a new identity and starts over.
package session

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/notifier"
	"github.com/millrace/millrace/internal/storage"
)

// Register records a new client process and takes its liveness lock on conn.
// While the lock is held the process is alive; when the connection ends
// (exit, crash, kill, network loss, Postgres restart) the lock goes with it
// and the leader releases the process's unfinished batches to other
// claimers. A process never reuses its id.
func Register(ctx context.Context, conn *pgx.Conn, name string) (int32, error) {
	host, _ := os.Hostname()
	var id int32
	err := conn.QueryRow(ctx, "SELECT millrace.register($1, $2, $3)", name, host, os.Getpid()).Scan(&id)
	return id, err
}

// TryLead tries to become the maintenance leader on conn (a session lock
// held until the connection ends). It reports whether this process leads.
func TryLead(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, 0)", storage.LockSpace).Scan(&ok)
	return ok, err
}

// Config configures a Session.
type Config struct {
	// Connect opens a new connection for the session.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Name is the process name recorded in millrace.process.
	Name   string
	Logger *slog.Logger
	// SetOwner is told each identity the session registers (0 while it has
	// none).
	SetOwner func(id int32)
	// Notify is called with the channel and payload of every notification;
	// WakeAll after a reconnect (notifications may have been missed).
	Notify  func(channel, payload string)
	WakeAll func()
	// Lead runs the leader's maintenance until ctx ends; it is started when
	// this process wins the leader lock and stopped when the connection
	// holding the lock fails.
	Lead func(ctx context.Context)
}

// Session is a running process presence.
type Session struct {
	cfg     Config
	done    chan struct{}
	id      int32 // the identity registered now
	leading atomic.Bool
}

// Leading says whether this process holds the leader lock now.
func (s *Session) Leading() bool { return s.leading.Load() }

// Start connects, registers an identity, and keeps the session alive in
// the background until ctx ends. It returns once the first identity is
// registered.
func Start(ctx context.Context, runCtx context.Context, cfg Config) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Session{cfg: cfg, done: make(chan struct{})}
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	go s.supervise(runCtx, conn)
	return s, nil
}

// Done is closed when the session has ended (its run context ended).
func (s *Session) Done() <-chan struct{} { return s.done }

func (s *Session) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := s.cfg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	id, err := Register(ctx, conn, s.cfg.Name)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if old := s.id; old != 0 {
		// The old identity is gone: give what it held to any claimer now
		// rather than when the leader next looks (its backend may linger,
		// half-open, and hold its liveness lock for a while).
		if _, err := conn.Exec(ctx, "SELECT millrace.release($1)", old); err != nil {
			s.cfg.Logger.Warn("millrace: releasing the batches of the lost identity failed; the leader releases them", "err", err)
		}
	}
	s.id = id
	s.cfg.SetOwner(id)
	return conn, nil
}

// supervise keeps the session connection (which carries the liveness lock)
// alive: when it fails, the process's identity is gone, so it registers a
// new one and the leader releases what the old identity held.
func (s *Session) supervise(ctx context.Context, conn *pgx.Conn) {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for {
		err := s.listen(ctx, conn)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("millrace: lost the session connection; registering again", "err", err)
		s.cfg.SetOwner(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var cerr error
			conn, cerr = s.connect(ctx)
			if cerr == nil {
				backoff = 100 * time.Millisecond
				break
			}
			backoff = min(backoff*2, 5*time.Second)
		}
		s.cfg.WakeAll()
	}
}

// listen runs the notifier on conn and, when this process wins the leader
// lock, the maintenance beside it.
func (s *Session) listen(ctx context.Context, conn *pgx.Conn) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leading := false
	var leadDone chan struct{}
	defer func() {
		cancel()
		if leadDone != nil {
			<-leadDone
		}
		s.leading.Store(false)
	}()
	tick := func(ctx context.Context, conn *pgx.Conn) error {
		if leading || s.cfg.Lead == nil {
			return nil
		}
		ok, err := TryLead(ctx, conn)
		if err != nil || !ok {
			return err
		}
		leading = true
		s.leading.Store(true)
		leadDone = make(chan struct{})
		go func() {
			defer close(leadDone)
			s.cfg.Lead(lctx)
		}()
		return nil
	}
	return notifier.Listen(lctx, conn, time.Second, s.cfg.Notify, tick)
}
