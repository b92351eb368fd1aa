// Package notifier wakes idle consumers. A Listener owns one long-lived
// connection that LISTENs on the millrace channel (the process's session
// connection; the process's liveness is a lease and does not depend on
// it); a Sender coalesces the NOTIFYs of a producer process so that a
// burst of jobs costs one NOTIFY per queue per few milliseconds instead of
// one per job (per-job NOTIFY serializes commits). A Sender sends on a
// connection of its own, so that its process's listener can tell its own
// notifications (Own) from other processes': the process has woken its
// local workers already, and an echo would only make them claim again.
package notifier

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/storage"
)

// The LISTEN/NOTIFY channels.
const (
	Channel       = "millrace"        // payload: a queue with new jobs
	SchedChannel  = "millrace_sched"  // a job was scheduled or a retry queued
	CancelChannel = "millrace_cancel" // payload: the id of a job to cancel
)

// Listen runs on conn until ctx ends or the connection fails: it calls wake
// with the channel, payload and sending backend's process id of every
// notification, and every at most
// `every` it calls tick with the connection (for work that must run on it,
// such as a ping that keeps it from sitting idle). It returns the error
// that ended it.
func Listen(ctx context.Context, conn *pgx.Conn, every time.Duration, wake func(channel, payload string, pid uint32), tick func(ctx context.Context, conn *pgx.Conn) error) error {
	if err := storage.Listen(ctx, conn, Channel, SchedChannel, CancelChannel); err != nil {
		return err
	}
	last := time.Time{}
	for {
		if time.Since(last) >= every {
			last = time.Now()
			if tick != nil {
				if err := tick(ctx, conn); err != nil {
					return err
				}
			}
		}
		wctx, cancel := context.WithTimeout(ctx, every)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
				continue
			}
			return err
		}
		wake(n.Channel, n.Payload, n.PID)
	}
}

// Sender sends coalesced notifications: the first Notify for a queue goes
// out at once; further ones within the window are folded into one trailing
// NOTIFY at the window's end. It sends them on a connection taken from
// Pool for itself (one more connection per process; taken again after an
// error), whose backend process id Own recognizes.
type Sender struct {
	Pool   *pgxpool.Pool
	Window time.Duration

	connMu sync.Mutex
	conn   *pgx.Conn     // the Sender's own connection, nil until the first send or after an error
	pid    atomic.Uint32 // conn's backend process id, 0 when there is none

	mu       sync.Mutex
	schedAt  time.Time // the soonest due time asked for and not yet sent (NotifySchedAt)
	schedNow bool      // a NOTIFY without a due time asked for and not yet sent (NotifySched)
	state    map[string]*queueState
	closing  bool
	wg       sync.WaitGroup
}

type queueState struct {
	inFlight bool // a send or window is open
	again    bool // another notify arrived during it
}

// Notify asks for one NOTIFY for queue soon. It never blocks on the database.
func (s *Sender) Notify(queue string) { s.notify(Channel, queue) }

// NotifySchedAt asks for one NOTIFY on SchedChannel soon: a job was
// scheduled to fall due at (the server's time) before the leader's
// promoter would look again. Its payload is the soonest due time asked
// for since the last one went out, in microseconds since the epoch (as an
// insert's NOTIFY says it): the promoter runs its next round then.
func (s *Sender) NotifySchedAt(at time.Time) {
	s.mu.Lock()
	if s.schedAt.IsZero() || at.Before(s.schedAt) {
		s.schedAt = at
	}
	s.mu.Unlock()
	s.notify(SchedChannel, "")
}

// NotifySched asks for one NOTIFY on SchedChannel soon, with no due time
// (a job was deferred to the schedule by a per-key limit): the promoter
// runs a round soon, which reads the next due time.
func (s *Sender) NotifySched() {
	s.mu.Lock()
	s.schedNow = true
	s.mu.Unlock()
	s.notify(SchedChannel, "")
}

// schedPayload takes what NotifySched and NotifySchedAt asked for since
// the last send as a NOTIFY payload: empty for a round soon, else the
// soonest due time; false when nothing is asked (a trailing send whose
// request the send before it took).
func (s *Sender) schedPayload() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, now := s.schedAt, s.schedNow
	s.schedAt, s.schedNow = time.Time{}, false
	switch {
	case now:
		return "", true
	case at.IsZero():
		return "", false
	}
	return strconv.FormatInt(at.UnixMicro(), 10), true
}

func (s *Sender) notify(channel, payload string) {
	key := channel + "\x00" + payload
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	if s.state == nil {
		s.state = map[string]*queueState{}
	}
	st := s.state[key]
	if st == nil {
		st = &queueState{}
		s.state[key] = st
	}
	if st.inFlight {
		st.again = true
		return
	}
	st.inFlight = true
	s.wg.Add(1)
	go s.run(channel, payload, st)
}

func (s *Sender) run(channel, payload string, st *queueState) {
	defer s.wg.Done()
	p, ask := "", true
	for failed := 0; ; {
		if failed == 0 {
			p = payload
			if channel == SchedChannel {
				p, ask = s.schedPayload() // what was asked since the last send (a failed one's is sent again)
			}
		}
		var err error
		if ask {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = s.send(ctx, channel, p)
			cancel()
		}
		time.Sleep(s.Window)
		s.mu.Lock()
		if err != nil && failed < 5 && !s.closing {
			// Not sent (a dropped connection, a restart): the queue's idle
			// consumers would otherwise find the jobs only at their next
			// poll, which backs off to Config.MaxPollInterval.
			failed++
			s.mu.Unlock()
			continue
		}
		failed = 0
		if !st.again || s.closing {
			st.inFlight = false
			s.mu.Unlock()
			return
		}
		st.again = false
		s.mu.Unlock()
	}
}

// send sends one NOTIFY on the Sender's own connection, taking one from
// the pool when it has none; after an error the connection is closed and
// the next send takes another.
func (s *Sender) send(ctx context.Context, channel, payload string) error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conn == nil {
		c, err := s.Pool.Acquire(ctx)
		if err != nil {
			return err
		}
		s.conn = c.Hijack()
		s.pid.Store(s.conn.PgConn().PID())
	}
	if err := storage.Notify(ctx, s.conn, channel, payload); err != nil {
		s.closeConn()
		return err
	}
	return nil
}

// closeConn closes the Sender's connection; the caller holds connMu.
func (s *Sender) closeConn() {
	if s.conn == nil {
		return
	}
	s.pid.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
	s.conn = nil
}

// Own says that a notification from backend process pid was sent by this
// Sender. Behind a pooler the id the client knows is the pooler's (as
// pgbouncer gives), or a backend that also serves other clients: the
// client asks only when its pool reaches PostgreSQL directly.
func (s *Sender) Own(pid uint32) bool {
	p := s.pid.Load()
	return p != 0 && p == pid
}

// Close waits for notifications under way and closes the Sender's
// connection.
func (s *Sender) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wg.Wait()
	s.connMu.Lock()
	s.closeConn()
	s.connMu.Unlock()
}
