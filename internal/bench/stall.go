package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Queues of the stall scenario, besides the strategy's main queue.
const (
	// QueueStallLong holds the one job that runs for the whole stress phase.
	QueueStallLong = "stall-long"
	// QueueStallUnserved receives StallUnservedRate jobs a second during
	// the stress phase and is served by no worker until the run ends.
	QueueStallUnserved = "stall-unserved"
)

// StallUnservedRate is how many jobs a second the stall scenario enqueues
// on QueueStallUnserved during the stress phase.
const StallUnservedRate = 5

// stallStartTimeout bounds how long the stress phase waits for the long
// job's work to start, and how long its end waits for that job to finish.
const stallStartTimeout = 30 * time.Second

// stall is the stall scenario's stress: three things that a queue must not
// wait for, while the main producer goes on as in every other scenario.
//
//   - one job of QueueStallLong runs for the whole phase: its worker blocks
//     until the phase ends, then completes it;
//   - QueueStallUnserved, which no worker serves, receives
//     StallUnservedRate jobs a second;
//   - a transaction on its own connection enqueues a job on the main queue
//     at the start of the phase and commits at its end.
//
// None of this pins the xmin horizon for long by itself: the held
// transaction does (it has an xid), like any enqueue-early-commit-late
// application. The jobs are side jobs (see tracker.newSideID). After the
// run, drain serves the unserved queue until each of its jobs has run once.
type stall struct {
	s   Staller
	t   *tracker
	url string

	mu     sync.Mutex
	stats  StallStats
	active bool

	// the long job
	longID      int64
	longStarted chan struct{}
	longRelease chan struct{}
	longDone    chan struct{}
	serveCancel context.CancelFunc
	serveDone   chan error

	// the held transaction
	conn    *pgx.Conn
	tx      pgx.Tx
	txID    int64
	txStart time.Time

	// the unserved queue's producer
	prodCancel context.CancelFunc
	prodWG     sync.WaitGroup
	unserved   []int64 // ids whose enqueue committed
}

func newStall(s Staller, t *tracker, url string) *stall {
	return &stall{s: s, t: t, url: url}
}

func (st *stall) job(id int64) Job { return Job{ID: id, Payload: payload} }

// start puts the three stall sources in place; it returns once the long
// job's work has started and the held transaction has enqueued its job.
func (st *stall) start(ctx context.Context) (err error) {
	st.mu.Lock()
	st.active = true
	st.mu.Unlock()
	defer func() {
		if err != nil {
			st.release()
		}
	}()

	// (a) The long job, served by a client of its own whose one worker
	// blocks until release.
	st.longID = st.t.newSideID()
	longID := st.longID
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	st.longStarted, st.longRelease, st.longDone = started, release, done
	if err := st.s.EnqueueQueue(ctx, QueueStallLong, []Job{st.job(longID)}); err != nil {
		st.t.markFailed([]int64{longID})
		return fmt.Errorf("stall: enqueue the long job: %w", err)
	}
	st.t.markEnqueued([]int64{longID})
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st.serveCancel, st.serveDone = cancel, make(chan error, 1)
	var startOnce, doneOnce sync.Once
	handle := func(hctx context.Context, j Job) error {
		st.t.started(j.ID, j.ReadyAt)
		if j.ID != longID {
			return nil
		}
		began := time.Now()
		startOnce.Do(func() { close(started) })
		select {
		case <-release:
		case <-hctx.Done():
			return hctx.Err()
		}
		st.mu.Lock()
		st.stats.LongJobS = round(time.Since(began).Seconds())
		st.mu.Unlock()
		doneOnce.Do(func() { close(done) })
		return nil
	}
	serveDone := st.serveDone
	go func() { serveDone <- st.s.Serve(sctx, QueueStallLong, 1, handle) }()
	select {
	case <-started:
	case err := <-serveDone:
		serveDone <- err // release waits for it too
		if err == nil {
			err = errors.New("stopped")
		}
		return fmt.Errorf("stall: serving %s: %w", QueueStallLong, err)
	case <-time.After(stallStartTimeout):
		return fmt.Errorf("stall: the %s job did not start within %v", QueueStallLong, stallStartTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}

	// (c) The transaction that enqueues now and commits at the phase's end.
	conn, err := connectAs(ctx, st.url, AppStall)
	if err != nil {
		return fmt.Errorf("stall: held transaction: %w", err)
	}
	st.conn = conn
	if st.tx, err = conn.Begin(ctx); err != nil {
		return fmt.Errorf("stall: held transaction: %w", err)
	}
	st.txID = st.t.newSideID()
	if err := st.s.EnqueueTx(ctx, st.tx, st.job(st.txID)); err != nil {
		st.t.markFailed([]int64{st.txID})
		st.txID = 0
		return fmt.Errorf("stall: enqueue in the held transaction: %w", err)
	}
	st.txStart = time.Now()

	// (b) The unserved queue: StallUnservedRate jobs a second on a fixed
	// schedule from now.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	st.prodCancel = pcancel
	st.prodWG.Add(1)
	go func() {
		defer st.prodWG.Done()
		st.produce(pctx)
	}()
	return nil
}

// produce enqueues the unserved queue's jobs until ctx is cancelled.
func (st *stall) produce(ctx context.Context) {
	begin := time.Now()
	for k := 0; ; k++ {
		if !sleepCtx(ctx, time.Until(begin.Add(time.Duration(k)*time.Second/StallUnservedRate))) {
			return
		}
		id := st.t.newSideID()
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		err := st.s.EnqueueQueue(ectx, QueueStallUnserved, []Job{st.job(id)})
		cancel()
		if err != nil {
			st.t.markFailed([]int64{id})
			continue
		}
		st.t.markEnqueued([]int64{id})
		st.mu.Lock()
		st.unserved = append(st.unserved, id)
		st.stats.UnservedEnqueued++
		st.mu.Unlock()
	}
}

// release stops the unserved queue's producer, commits the held
// transaction, lets the long job finish and stops its client. It is safe to
// call more than once, and after a start that failed half-way.
func (st *stall) release() {
	st.mu.Lock()
	active := st.active
	st.active = false
	st.mu.Unlock()
	if !active {
		return
	}
	if st.prodCancel != nil {
		st.prodCancel()
		st.prodWG.Wait()
		st.prodCancel = nil
	}
	if st.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if st.tx != nil && st.txID != 0 {
			if err := st.tx.Commit(ctx); err != nil {
				st.t.markFailed([]int64{st.txID})
			} else {
				st.t.markEnqueued([]int64{st.txID})
				st.mu.Lock()
				st.stats.HeldTxS = round(time.Since(st.txStart).Seconds())
				st.mu.Unlock()
			}
		} else if st.tx != nil {
			_ = st.tx.Rollback(ctx)
		}
		st.conn.Close(ctx)
		cancel()
		st.conn, st.tx, st.txID = nil, nil, 0
	}
	if st.longRelease != nil {
		close(st.longRelease)
		select {
		case <-st.longStarted: // running: it finishes now
			select {
			case <-st.longDone:
			case <-time.After(stallStartTimeout):
			}
		default: // never started
		}
		st.longRelease = nil
	}
	if st.serveCancel != nil {
		st.serveCancel()
		<-st.serveDone
		st.serveCancel = nil
	}
}

// drain serves the unserved queue after the run until each job enqueued on
// it has run once, or until timeout; those left are counted as remaining
// (backlog), not lost, by the strategy's Remaining.
func (st *stall) drain(ctx context.Context, timeout time.Duration) error {
	st.mu.Lock()
	ids := append([]int64(nil), st.unserved...)
	st.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	began := time.Now()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	handle := func(_ context.Context, j Job) error {
		st.t.started(j.ID, j.ReadyAt)
		return nil
	}
	go func() { served <- st.s.Serve(sctx, QueueStallUnserved, 4, handle) }()
	deadline := time.Now().Add(timeout)
	var err error
	returned := false
	for pending := ids; ctx.Err() == nil && time.Now().Before(deadline); {
		for len(pending) > 0 && st.t.ran(pending[0]) {
			pending = pending[1:]
		}
		if len(pending) == 0 {
			break
		}
		select {
		case err = <-served:
			returned = true
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
		if returned {
			if err == nil {
				err = errors.New("stopped")
			}
			err = fmt.Errorf("serving %s: %w", QueueStallUnserved, err)
			break
		}
	}
	cancel() // the client stops and writes its last acks
	if !returned {
		err = <-served
	}
	var worked int64
	for _, id := range ids {
		if st.t.ran(id) {
			worked++
		}
	}
	st.mu.Lock()
	st.stats.UnservedWorked = worked
	st.stats.DrainS = round(time.Since(began).Seconds())
	st.mu.Unlock()
	return err
}

// summary returns the scenario's figures.
func (st *stall) summary() *StallStats {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.stats
	return &s
}
