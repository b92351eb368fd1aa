// The acker: the outcomes of attempts, written in bulk and fenced.

package pool

import (
	"context"
	"slices"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// doneMark is an ack-channel entry that closes a batch.
const doneMark int16 = -1

func (p *Pool) ack(b *batch, a storage.Ack) {
	p.send(a)
	if b.remaining.Add(-1) == 0 {
		p.send(storage.Ack{Batch: b.Batch, State: doneMark})
	}
}

// send queues an ack for the acker; once the acker has exited (a job
// outlived Stop's deadline) the ack is dropped: its batch is released and
// the job runs again elsewhere.
func (p *Pool) send(a storage.Ack) {
	select {
	case p.acks <- a:
	case <-p.ackerDone:
	}
}

func (p *Pool) acker() {
	defer close(p.ackerDone)
	for {
		var first storage.Ack
		select {
		case first = <-p.acks:
		case <-p.ackStop:
			// Write what is queued, then exit.
			var rest []storage.Ack
			for {
				select {
				case a := <-p.acks:
					rest = append(rest, a)
					continue
				default:
				}
				break
			}
			if len(rest) > 0 {
				p.flush(rest)
			}
			return
		}
		pending := []storage.Ack{first}
		deadline := p.flushBy(first, time.Now().Add(p.cfg.FlushDelay))
		timer := time.NewTimer(time.Until(deadline))
	gather:
		for {
			select {
			case a := <-p.acks:
				pending = append(pending, a)
				if d := p.flushBy(a, deadline); d.Before(deadline) {
					deadline = d
					timer.Reset(max(time.Until(d), 0))
				}
			case <-timer.C:
				break gather
			case <-p.ackStop:
				break gather // Stop: write what is pending now
			}
		}
		timer.Stop()
		// Drain whatever else is already queued.
	drain:
		for {
			select {
			case a := <-p.acks:
				pending = append(pending, a)
			default:
				break drain
			}
		}
		p.flush(pending)
	}
}

// flushBy is when a flush that must be written by deadline must be
// written once it also carries a: sooner when a frees a slot of a
// per-key limit whose slots its claim left all held (other processes,
// which may wait for one, see the slot free only once it is flushed:
// KeyFlushDelay) or is a retry or snooze due before deadline (the
// schedule holds it only once it is flushed). The end of a job whose key
// had room waits for the flush as any other: at 800 jobs/s over 1,000
// keys nearly every key has room, and flushing each end within 5 ms
// doubled the flushes.
func (p *Pool) flushBy(a storage.Ack, deadline time.Time) time.Time {
	if a.Job == nil {
		return deadline // a batch's end
	}
	if a.Job.Key != "" && a.Job.KeyFull {
		if d := time.Now().Add(p.cfg.KeyFlushDelay); d.Before(deadline) {
			deadline = d
		}
	}
	if (a.State == storage.AckRetried || a.State == storage.AckSnoozed) && !a.RetryAt.IsZero() {
		if d := time.Now().Add(a.RetryAt.Sub(p.cfg.Now())); d.Before(deadline) {
			deadline = d
		}
	}
	return deadline
}

func (p *Pool) flush(pending []storage.Ack) {
	var acks []storage.Ack
	var done []*storage.Batch
	for _, a := range pending {
		if a.State == doneMark {
			done = append(done, a.Batch)
		} else {
			acks = append(acks, a)
		}
	}
	p.flushParts(acks, done)
}

// flushParts writes acks, then done, and never drops them. A flush the
// server rejects (as opposed to a lost connection) is split in halves
// until the ack it rejects is alone; that ack is then written with a
// placeholder error text. Batches are closed with the last part.
func (p *Pool) flushParts(acks []storage.Ack, done []*storage.Batch) {
	err := p.flushOnce(acks, done)
	if err == nil {
		return
	}
	if p.ackCtx.Err() != nil {
		p.gaveUp(acks, done)
		return
	}
	if len(acks) > 1 {
		half := len(acks) / 2
		p.flushParts(acks[:half], nil)
		p.flushParts(acks[half:], done)
		return
	}
	if len(acks) == 1 && acks[0].Err != unstorable {
		p.cfg.Logger.Error("millrace: the server rejected an ack; storing it with a placeholder error", "job", acks[0].Job.ID, "err", err)
		a := acks[0]
		a.Err = unstorable
		p.flushParts([]storage.Ack{a}, done)
		return
	}
	// Nothing left to simplify: keep trying, slowly, and say so, until
	// Stop gives up.
	for attempt := 0; p.ackCtx.Err() == nil; attempt++ {
		p.cfg.Logger.Error("millrace: the server keeps rejecting an ack flush; retrying", "acks", len(acks), "done", len(done), "err", err)
		if !p.pause(min(time.Second<<min(attempt, 5), 30*time.Second)) {
			break
		}
		if err = p.flushOnce(acks, done); err == nil {
			return
		}
	}
	p.gaveUp(acks, done)
}

// pause waits d, or less if Stop gives up the acks (then false).
func (p *Pool) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ackCtx.Done():
		return false
	}
}

// gaveUp says what Stop's deadline left unwritten: those jobs run again
// once their batches are released.
func (p *Pool) gaveUp(acks []storage.Ack, done []*storage.Batch) {
	p.cfg.Logger.Error("millrace: stop deadline passed before these outcomes were written; their jobs run again elsewhere",
		"acks", len(acks), "done", len(done))
}

// unstorable replaces an error text the server would not store.
const unstorable = "millrace: the job's error text could not be stored"

// flushOnce writes one flush under one sequence number, retrying while the
// connection or server is away, or the server rolled it back for a reason
// of its own (a serialization failure, a deadlock, a timeout: see
// storage.Retryable); a replay of a flush that did commit is a no-op. It
// returns the error of a flush the server rejected.
func (p *Pool) flushOnce(acks []storage.Ack, done []*storage.Batch) error {
	owner := p.Owner()
	for owner == 0 {
		if !p.pause(20 * time.Millisecond) { // registering a new identity
			return p.ackCtx.Err()
		}
		owner = p.Owner()
	}
	seq := p.flushSeq.Add(1)
	backoff := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(p.ackCtx, 30*time.Second)
		fenced, shift, err := p.cfg.Store.FlushShift(ctx, owner, seq, attempt > 0, acks, done)
		cancel()
		if err == nil {
			p.paced(acks)
			if outcomes := outcomesOf(acks); p.cfg.OnAcked != nil && len(outcomes) > 0 {
				p.cfg.OnAcked(unfenced(outcomes, fenced), shift)
			}
			for _, t := range fenced {
				p.cfg.Logger.Warn("millrace: batch was released to another process; its acks from here were dropped", "tick", t)
				if p.cfg.OnFenced != nil {
					p.cfg.OnFenced(t)
				}
			}
			return nil
		}
		if !storage.Retryable(err) || p.ackCtx.Err() != nil {
			return err
		}
		p.cfg.Logger.Warn("millrace: ack flush failed; retrying", "acks", len(acks), "err", err, "attempt", attempt)
		if !p.pause(backoff) {
			return p.ackCtx.Err()
		}
		backoff = min(backoff*2, time.Second)
	}
}

// paced counts, for each job of a per-key limit that this flush wrote the
// end of, the time its key's slot was held here (from its start to now)
// into its queue's pace: a claim paces the jobs it defers by it.
func (p *Pool) paced(acks []storage.Ack) {
	now := p.cfg.Now()
	for _, a := range acks {
		if a.Job.Key == "" || a.Started.IsZero() {
			continue
		}
		if q := p.queues[a.Job.Queue]; q != nil {
			q.ran(now.Sub(a.Started))
		}
	}
}

// outcomesOf is acks without the entries that only free a key's slot
// (storage.AckKeyFreed): no outcome, no event.
func outcomesOf(acks []storage.Ack) []storage.Ack {
	for i, a := range acks {
		if a.State == storage.AckKeyFreed {
			out := slices.Clone(acks[:i])
			for _, b := range acks[i+1:] {
				if b.State != storage.AckKeyFreed {
					out = append(out, b)
				}
			}
			return out
		}
	}
	return acks
}

// unfenced is acks without those of the fenced batches.
func unfenced(acks []storage.Ack, fenced []int64) []storage.Ack {
	if len(fenced) == 0 {
		return acks
	}
	out := make([]storage.Ack, 0, len(acks))
	for _, a := range acks {
		if !slices.Contains(fenced, a.Batch.TickID) {
			out = append(out, a)
		}
	}
	return out
}

// DefaultFlushDelay is Config.FlushDelay's default. A flush costs the
// server about the same whatever it carries: at 800 jobs/s of the full mix
// in four processes, 5 ms made flushes of four jobs.
const DefaultFlushDelay = 20 * time.Millisecond
