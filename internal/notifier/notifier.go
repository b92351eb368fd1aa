// Package notifier wakes idle consumers. A Listener owns one long-lived
// connection that LISTENs on the millrace channel (the process's session
// connection; the process's liveness is a lease and does not depend on
// it); a Sender coalesces the NOTIFYs of a producer process so that a
// burst of jobs costs one NOTIFY per queue per few milliseconds instead of
// one per job (per-job NOTIFY serializes commits).
package notifier

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The LISTEN/NOTIFY channels.
const (
	Channel       = "millrace"        // payload: a queue with new jobs
	SchedChannel  = "millrace_sched"  // a job was scheduled or a retry queued
	CancelChannel = "millrace_cancel" // payload: the id of a job to cancel
)

// Listen runs on conn until ctx ends or the connection fails: it calls wake
// with the channel and payload of every notification, and every at most
// `every` it calls tick with the connection (for work that must run on it,
// such as a ping that keeps it from sitting idle). It returns the error
// that ended it.
func Listen(ctx context.Context, conn *pgx.Conn, every time.Duration, wake func(channel, payload string), tick func(ctx context.Context, conn *pgx.Conn) error) error {
	for _, ch := range []string{Channel, SchedChannel, CancelChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
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
		wake(n.Channel, n.Payload)
	}
}

// Sender sends coalesced notifications: the first Notify for a queue goes
// out at once; further ones within the window are folded into one trailing
// NOTIFY at the window's end.
type Sender struct {
	Pool   *pgxpool.Pool
	Window time.Duration

	mu      sync.Mutex
	state   map[string]*queueState
	closing bool
	wg      sync.WaitGroup
}

type queueState struct {
	inFlight bool // a send or window is open
	again    bool // another notify arrived during it
}

// Notify asks for one NOTIFY for queue soon. It never blocks on the database.
func (s *Sender) Notify(queue string) { s.notify(Channel, queue) }

// NotifySched asks for one NOTIFY on SchedChannel soon: a job was
// scheduled to fall due before the leader's promoter would look again.
func (s *Sender) NotifySched() { s.notify(SchedChannel, "") }

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
	for failed := 0; ; {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := s.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload)
		cancel()
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

// Close waits for notifications under way.
func (s *Sender) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wg.Wait()
}
