// Package session is a client process's presence in the database: one
// long-lived connection that carries its identity (a session advisory lock
// the leader reads to tell a dead process from a slow one), LISTENs for
// notifications, competes for the maintenance leader lock, and, when the
// connection fails, registers a new identity and starts over.
package session

import (
	"context"
	"errors"
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
// claimers. A process never reuses another's id.
func Register(ctx context.Context, conn *pgx.Conn, name string) (int32, error) {
	host, _ := os.Hostname()
	var id int32
	err := conn.QueryRow(ctx, "SELECT millrace.register($1, $2, $3)", name, host, os.Getpid()).Scan(&id)
	return id, err
}

// sessionSettings is what the session connection sets for itself, at
// session level, whatever the role's or database's defaults:
//
//   - idle_session_timeout off: the connection sits idle by design (it
//     LISTENs and holds locks); a server that closed it would take the
//     process's liveness with it, as if the process had died.
//   - idle_in_transaction_session_timeout, statement_timeout and
//     lock_timeout off, and READ COMMITTED: its statements are short and
//     its few transactions (register, release) take a lock and then read.
//   - TCP keepalives (30 s idle, 10 s apart, 3 probes): a peer that
//     vanishes without closing the connection must not hold the liveness
//     and leader locks for the operating system's default two hours. Set
//     here rather than as startup parameters, which a connection pooler
//     refuses unless told to ignore them (the session connection must not
//     go through a transaction pooler; Retake checks that it does not).
const sessionSettings = `SELECT set_config('idle_session_timeout', '0', false),
	set_config('idle_in_transaction_session_timeout', '0', false),
	set_config('statement_timeout', '0', false), set_config('lock_timeout', '0', false),
	set_config('default_transaction_isolation', 'read committed', false),
	set_config('tcp_keepalives_idle', '30', false), set_config('tcp_keepalives_interval', '10', false),
	set_config('tcp_keepalives_count', '3', false),
	pg_backend_pid()`

// ErrThroughPooler is returned when the session connection does not reach
// a PostgreSQL backend of its own: a connection pooler stands between
// them. The session holds session-level state (the process's liveness
// lock, the leader lock, LISTEN) that a pooler in transaction mode would
// leave on a pooled backend after the process died.
var ErrThroughPooler = errors.New("millrace: the session connection goes through a connection pooler (its backend's process id differs from the one it reported at startup); it must reach PostgreSQL directly: set Config.SessionURL")

// Prepare applies sessionSettings to conn and checks that conn has a
// backend of its own.
func Prepare(ctx context.Context, conn *pgx.Conn) error {
	var backend int32
	var skip [8]any
	dest := make([]any, 0, 9)
	for i := range skip {
		dest = append(dest, &skip[i])
	}
	dest = append(dest, &backend)
	if err := conn.QueryRow(ctx, sessionSettings).Scan(dest...); err != nil {
		return err
	}
	if uint32(backend) != conn.PgConn().PID() {
		return ErrThroughPooler
	}
	return nil
}

// Retake takes identity id's liveness lock again on conn, after the
// connection that held it was lost while the process lived on. If the old
// connection's backend (oldPID) still holds it (the server has not yet
// noticed that connection is gone), that backend is ended first. It
// reports whether conn now holds the lock: the process keeps its identity
// and its batches.
func Retake(ctx context.Context, conn *pgx.Conn, id int32, oldPID uint32) (bool, error) {
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", storage.LockSpace, id).Scan(&ok); err != nil || ok {
		return ok, err
	}
	// End the old backend if it is the one holding the lock (waiting up
	// to 5 s for it to exit), then try again.
	var ended *bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(l.pid, 5000) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2 AND l.pid = $3`,
		int64(storage.LockSpace), int64(id), int64(oldPID)).Scan(&ended); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", storage.LockSpace, id).Scan(&ok)
	return ok, err
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
	id      int32  // the identity registered now
	pid     uint32 // the backend of the connection holding its lock
	leading atomic.Bool
}

// Leading says whether this process holds the leader lock now.
func (s *Session) Leading() bool { return s.leading.Load() }

// ID is the process identity the session holds (or is retaking).
func (s *Session) ID() int32 { return s.id }

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
	if err := Prepare(ctx, conn); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if old := s.id; old != 0 {
		// The process lives on: keep its identity, and with it its
		// batches, when its liveness lock can be taken again.
		ok, err := Retake(ctx, conn, old, s.pid)
		if err != nil {
			conn.Close(ctx)
			return nil, err
		}
		if ok {
			s.pid = conn.PgConn().PID()
			s.cfg.Logger.Info("millrace: session connection restored; the process keeps its identity", "process", old)
			s.cfg.SetOwner(old)
			return conn, nil
		}
	}
	id, err := Register(ctx, conn, s.cfg.Name)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if old := s.id; old != 0 {
		// The old identity is gone (its lock could not be taken back):
		// give what it held to any claimer now rather than when the
		// leader next looks.
		s.cfg.Logger.Warn("millrace: the process's identity could not be taken back; registered a new one", "old", old, "new", id)
		if _, err := conn.Exec(ctx, "SELECT millrace.release($1)", old); err != nil {
			s.cfg.Logger.Warn("millrace: releasing the batches of the lost identity failed; the leader releases them", "err", err)
		}
	}
	s.id, s.pid = id, conn.PgConn().PID()
	s.cfg.SetOwner(id)
	return conn, nil
}

// supervise keeps the session connection (which carries the liveness lock)
// alive: when it fails, it connects again at once and takes the process's
// identity back (a lost connection is not a death), or registers a new
// one if it cannot.
func (s *Session) supervise(ctx context.Context, conn *pgx.Conn) {
	defer close(s.done)
	for {
		err := s.listen(ctx, conn)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("millrace: lost the session connection; connecting again", "err", err)
		// No claims while the identity is in doubt; running jobs go on.
		s.cfg.SetOwner(0)
		backoff := time.Duration(0) // the first attempt at once: the leader may be looking
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
				s.cfg.Logger.Error("millrace: the session connection goes through a pooler; the process cannot register", "err", cerr)
			}
			backoff = min(max(backoff*2, 100*time.Millisecond), 5*time.Second)
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
			// A cheap statement every tick: the connection is never idle
			// for long (a middlebox's idle timeout), and a connection that
			// is gone is noticed within a tick, not when TCP gives up.
			return conn.Ping(ctx)
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
