package millrace

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// EventKind is what happened to a job.
type EventKind string

// The events a subscription receives: each is sent once the outcome is
// committed.
const (
	EventCompleted EventKind = "completed" // the job succeeded
	EventFailed    EventKind = "failed"    // an attempt failed; the job runs again at RetryAt
	EventDiscarded EventKind = "discarded" // it failed for the last time (or asked to be discarded)
	EventCancelled EventKind = "cancelled" // it was cancelled (from outside, or by its worker)
	EventSnoozed   EventKind = "snoozed"   // it runs again at RetryAt, the attempt not counted
)

// Event is one outcome of a job worked by this process.
type Event struct {
	Kind        EventKind
	ID          int64
	Queue       string
	JobKind     string
	Attempt     int // 1 for the first run
	MaxAttempts int
	Priority    int
	Err         string    // the attempt's error, if any
	CreatedAt   time.Time // when the job was inserted
	ReadyAt     time.Time // when it became ready to run
	Started     time.Time // when this attempt began (zero: it never ran)
	Finished    time.Time // when this attempt ended
	RetryAt     time.Time // for failed and snoozed jobs
}

// Wait is how long the job waited between becoming ready and starting.
func (e *Event) Wait() time.Duration {
	if e.Started.IsZero() {
		return 0
	}
	return e.Started.Sub(e.ReadyAt)
}

// RunTime is how long the attempt ran.
func (e *Event) RunTime() time.Duration {
	if e.Started.IsZero() {
		return 0
	}
	return e.Finished.Sub(e.Started)
}

// events fans outcomes out to subscribers.
type events struct {
	mu      sync.Mutex
	subs    map[*subscription]struct{}
	dropped atomic.Int64
}

type subscription struct {
	ch    chan *Event
	kinds map[EventKind]bool // nil: all
}

// SubscribeBuffer is the capacity of a subscription's channel. A
// subscriber that falls this far behind loses events (counted by
// Client.DroppedEvents) rather than slowing the workers.
const SubscribeBuffer = 1000

// Subscribe returns a channel of this process's job events of the given
// kinds (all kinds if none), sent after each outcome is committed, and a
// function that ends the subscription and closes the channel.
func (c *Client) Subscribe(kinds ...EventKind) (<-chan *Event, func()) {
	s := &subscription{ch: make(chan *Event, SubscribeBuffer)}
	if len(kinds) > 0 {
		s.kinds = map[EventKind]bool{}
		for _, k := range kinds {
			s.kinds[k] = true
		}
	}
	e := &c.events
	e.mu.Lock()
	if e.subs == nil {
		e.subs = map[*subscription]struct{}{}
	}
	e.subs[s] = struct{}{}
	e.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			e.mu.Lock()
			delete(e.subs, s)
			e.mu.Unlock()
			close(s.ch)
		})
	}
}

// DroppedEvents is the number of events not delivered because a
// subscriber's channel was full.
func (c *Client) DroppedEvents() int64 { return c.events.dropped.Load() }

var eventKinds = map[int16]EventKind{
	storage.AckCompleted: EventCompleted, storage.AckRetried: EventFailed, storage.AckDiscarded: EventDiscarded,
	storage.AckCancelled: EventCancelled, storage.AckSnoozed: EventSnoozed,
}

// publishAcks sends the events of committed acks.
func (e *events) publishAcks(acks []storage.Ack) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.subs) == 0 {
		return
	}
	for _, a := range acks {
		j := a.Job
		ev := &Event{Kind: eventKinds[a.State], ID: j.ID, Queue: j.Queue, JobKind: j.Kind, Attempt: j.Attempt + 1,
			MaxAttempts: j.MaxAttempts, Priority: int(j.Priority), Err: a.Err, CreatedAt: j.CreatedAt, ReadyAt: j.ReadyAt,
			Started: a.Started, Finished: a.Finished, RetryAt: a.RetryAt}
		for s := range e.subs {
			if s.kinds != nil && !s.kinds[ev.Kind] {
				continue
			}
			select {
			case s.ch <- ev:
			default:
				e.dropped.Add(1)
			}
		}
	}
}
