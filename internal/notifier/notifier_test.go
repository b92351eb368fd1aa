package notifier

import (
	"context"
	"errors"
	"strconv"
	"sync"
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

// listen starts a listener on the channels of the database of s's pool;
// next returns the next notification it heard (failing the test after
// 10 s), stop ends it and returns what Listen returned (at the test's end
// too, before its connection closes).
func listen(t *testing.T, s *Sender) (next func() heard, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, s.Pool.Config().ConnString()) // the same database: notifications are per database
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var lerr error
	ended := make(chan error, 1)
	stop = func() error {
		once.Do(func() {
			cancel()
			lerr = <-ended
		})
		return lerr
	}
	t.Cleanup(func() {
		stop()
		conn.Close(context.Background())
	})
	got := make(chan heard, 16)
	listening := make(chan struct{})
	go func() {
		ended <- Listen(ctx, conn, 50*time.Millisecond, func(channel, payload string, pid uint32) {
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
	return func() heard {
		t.Helper()
		select {
		case h := <-got:
			return h
		case <-time.After(10 * time.Second):
			t.Fatal("no notification heard")
			return heard{}
		}
	}, stop
}

// TestSchedNotificationsSayWhenTheJobFallsDue: a Sender's NOTIFY on
// SchedChannel names the soonest due time asked for since the last one
// (microseconds since the epoch), folding those asked within its window
// into one; one asked with no time (NotifySched) has an empty payload. An
// insert through SQL names its soonest scheduled job's due time the same
// way.
func TestSchedNotificationsSayWhenTheJobFallsDue(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &Sender{Pool: pool, Window: 300 * time.Millisecond}
	defer s.Close()
	next, _ := listen(t, s)
	micros := func(at time.Time) string { return strconv.FormatInt(at.UnixMicro(), 10) }

	base := time.Now().Add(time.Second).Truncate(time.Microsecond)
	s.NotifySchedAt(base)
	if h := next(); h != (heard{SchedChannel, micros(base), true}) {
		t.Fatalf("heard %+v; want the due time %s on %s", h, micros(base), SchedChannel)
	}
	// Within the window: one trailing NOTIFY, with the sooner of the two.
	s.NotifySchedAt(base.Add(200 * time.Millisecond))
	s.NotifySchedAt(base.Add(100 * time.Millisecond))
	if h := next(); h != (heard{SchedChannel, micros(base.Add(100 * time.Millisecond)), true}) {
		t.Fatalf("heard %+v; want one NOTIFY with the sooner due time %s", h, micros(base.Add(100*time.Millisecond)))
	}
	s.NotifySched()
	if h := next(); h != (heard{SchedChannel, "", true}) {
		t.Fatalf("heard %+v; want an empty payload for a NOTIFY without a due time", h)
	}

	var due time.Time
	if err := pool.QueryRow(ctx, `SELECT run_at FROM millrace.insert_many(p_kind => '{k}', p_args => '{"{}"}'::jsonb[],
		p_queue => '{q}', p_priority => '{1}', p_run_at => ARRAY[clock_timestamp() + interval '500 ms'], p_max_attempts => '{1}')`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if h := next(); h != (heard{SchedChannel, micros(due), false}) {
		t.Fatalf("an insert's NOTIFY: heard %+v; want the job's due time %s on %s", h, micros(due), SchedChannel)
	}
}

// TestOwnTellsTheSendersNotifications: a listener hears a Sender's
// notification and Own says it is the Sender's; a NOTIFY from another
// session (another process's producer, or a transaction that enqueued) is
// not; after Close, Own recognizes nothing.
func TestOwnTellsTheSendersNotifications(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &Sender{Pool: pool, Window: time.Millisecond}
	next, stop := listen(t, s)

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
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen ended with %v", err)
	}
}
