package notifier

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type heard struct {
	channel, payload string
	own              bool
}

// TestOwnTellsTheSendersNotifications: a listener hears a Sender's
// notification and Own says it is the Sender's; a NOTIFY from another
// session (another process's producer, or a transaction that enqueued) is
// not; after Close, Own recognizes nothing.
func TestOwnTellsTheSendersNotifications(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := testkit.DB(t)
	conn, err := pgx.Connect(ctx, pool.Config().ConnString()) // the same database: notifications are per database
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	s := &Sender{Pool: pool, Window: time.Millisecond}
	got := make(chan heard, 16)
	listening := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Listen(ctx, conn, 50*time.Millisecond, func(channel, payload string, pid uint32) {
			got <- heard{channel, payload, s.Own(pid)}
		}, func(context.Context, *pgx.Conn) error {
			select {
			case <-listening:
			default:
				close(listening) // the first tick comes after LISTEN
			}
			return nil
		})
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	next := func() heard {
		t.Helper()
		select {
		case h := <-got:
			return h
		case <-time.After(10 * time.Second):
			t.Fatal("no notification heard")
			return heard{}
		}
	}

	s.Notify("q")
	if h := next(); h != (heard{Channel, "q", true}) {
		t.Fatalf("the Sender's notification: heard %+v; want it on %s for q, recognized as its own", h, Channel)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, 'q')", Channel); err != nil {
		t.Fatal(err)
	}
	if h := next(); h != (heard{Channel, "q", false}) {
		t.Fatalf("another session's notification: heard %+v; want it for q, not recognized", h)
	}
	s.Notify("r")
	if h := next(); h != (heard{Channel, "r", true}) {
		t.Fatalf("the Sender's second notification: heard %+v", h)
	}
	pid := s.pid.Load()
	s.Close()
	if s.Own(pid) {
		t.Fatalf("after Close, Own(%d) is true", pid)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen ended with %v", err)
	}
}
