// The claimer: one per queue, it takes batches when the queue's workers
// have room and hands their jobs over.

package pool

import (
	"context"
	"slices"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// Wake tells a queue's claimer that new jobs may have committed.
func (p *Pool) Wake(queueName string) {
	if q, ok := p.queues[queueName]; ok {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// WakeRemote tells a queue's claimer that another process announced new
// jobs. A claimer that has been losing announcements to other processes
// answers it after its yield (Config.Yield); a job committed meanwhile
// is taken by whichever claim comes first.
func (p *Pool) WakeRemote(queueName string) {
	if q, ok := p.queues[queueName]; ok {
		select {
		case q.heard <- struct{}{}:
		default:
		}
	}
}

// DefaultYield is Config.Yield's default: a process that keeps losing
// announcements claims for them at most 20 times a second, and a job no
// other process could take (they are full) waits at most this long for
// it.
const DefaultYield = 50 * time.Millisecond

// DefaultGather is Config.Gather's default. The full mix at 800 jobs/s
// in four processes under a running and a per-key limit (docs/bench.md,
// 2026-12-08 (morning)): claims 732-744 a thousand jobs without it, 322-327
// with it; Postgres CPU 136-139% against 113-114%, the same mix without
// limits 105-122%; a job's start p50 5.7-5.9 ms against 10.4-11.0.
const DefaultGather = 40 * time.Millisecond

// WakeAll wakes every claimer (after a reconnect, notifications may have
// been missed).
func (p *Pool) WakeAll() {
	for name := range p.queues {
		p.Wake(name)
	}
}

func (p *Pool) claim(q *queue) {
	defer p.claimersWG.Done()
	ctx := p.claimCtx
	backoff := 10 * time.Millisecond
	idle := p.cfg.Poll // the wait after a claim that found nothing
	maxJobs := q.maxJobs
	lim := storage.Limits{MaxJobs: maxJobs, MaxBytes: p.cfg.MaxBatchBytes, Starve: p.cfg.Starve}
	// req numbers this claimer's calls. After an error the same req is
	// sent again with retry set: if the failed call committed and only its
	// reply was lost, its batch comes back instead of being stranded.
	var req int64
	// yield is how long an announcement of another process waits before
	// this claimer answers it: 0 while its claims take jobs, doubling
	// while they find the queue's newest batch taken by another process.
	var yield time.Duration
	retry := false
	retryOwner := int32(0)
	// peek: the claimer answers an announcement after a whole yield (it has
	// been losing them): it asks first whether a claim would find anything.
	peek := false
	for ctx.Err() == nil {
		// Claim only when the workers have room: the buffer holds at most
		// one job per worker, and a new batch is taken once it has drained.
		if len(q.jobs) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-q.taken:
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		owner := p.Owner()
		if owner == 0 || (p.cfg.Fresh != nil && !p.cfg.Fresh()) {
			// No identity, or one that may be dead (the process was stopped
			// or cut off): wait for a heartbeat to say.
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if retry && owner != retryOwner {
			retry = false // the old identity's batches are released by the leader
		}
		if peek && !retry {
			peek = false
			// Most claims that answer a yielded announcement found the
			// newest batch already taken and nothing past it: a peek
			// (millrace.claim_peek) says so without the claim's lock,
			// writes and transaction. A failed peek claims.
			if by, err := p.cfg.Store.Peek(ctx, q.name); err == nil && by != 0 {
				p.peeked.Fire(by)
				if by != owner && p.cfg.Yield > 0 {
					yield = min(max(2*yield, time.Millisecond), p.cfg.Yield)
				}
				var ok bool
				if idle, ok, peek = p.idle(q, idle, yield); !ok {
					return
				}
				continue
			}
		}
		if !retry {
			req++
		}
		if q.bound.Load() && q.waits(q.held.Load()) {
			// A running limit bound its last claim, and the jobs in hand
			// fill its slots and half the buffer: claim when they no
			// longer do (free wakes it), or after a Poll, which may find
			// slots another process gave back.
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
			case <-time.After(p.cfg.Poll):
			}
			if q.bound.Load() && q.waits(q.held.Load()) {
				continue
			}
		}
		start := time.Now()
		// The workers idle now start the first jobs of the claim at once
		// (nothing else feeds them): the claim records their starts; under
		// a running limit, no more than the process's free slots.
		lim.Start = int(q.idle.Load())
		lim.MaxJobs = maxJobs
		lim.Buffer = 0
		if q.bound.Load() && !q.rated.Load() {
			// A running limit bound the last claim: this one may take a
			// buffer, up to a claim's jobs and eight per slot of the
			// process (the claim's bound), jobs that wait in the process
			// for its own slots, which then start them without a claim
			// each; only what the free slots start now is marked started.
			// Otherwise every job the claim takes has a slot (and
			// starts at once on an idle worker, marked by the claim).
			_, _, lim.Start = q.gate.state(lim.Start)
			lim.Buffer = q.maxJobs
		} else if !q.rated.Load() && !q.keyed.Load() && 2*lim.Start >= maxJobs && lim.Start < maxJobs {
			// Most workers idle: the claim takes what they start now, no
			// more, so its new batch is marked started as a whole on its
			// tick (claim_start writes a start row for a claim that may
			// take more jobs than it marks: at 800 jobs/s a third of all
			// claims, for one or two jobs each). The busy workers are fed
			// by the next claim, made at once when this one reaches its
			// cap.
			lim.MaxJobs = lim.Start
		}
		if q.rated.Load() {
			// Under a rate limit a job counts as started at its claim: the
			// claim takes only what the idle workers start at once.
			if lim.Start < 1 {
				q.short.Store(true) // a job ending wakes it
				select {
				case <-ctx.Done():
					return
				case <-q.wake:
				case <-time.After(p.cfg.Poll):
				}
				continue
			}
			lim.MaxJobs = min(maxJobs, lim.Start)
		}
		held := int(q.held.Load())
		lim.Held = &held
		lim.Pace = time.Duration(q.pace.Load())
		replay := retry
		sbs, seen, err := p.cfg.Store.ClaimSeen(ctx, q.name, owner, req, retry, lim)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			retry, retryOwner = true, owner
			p.cfg.Logger.Warn("millrace: claim failed; retrying", "queue", q.name, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		retry = false
		if seen.Deferred && p.cfg.OnDeferred != nil {
			p.cfg.OnDeferred()
		}
		q.gate.set(seen.Limit > 0, int(seen.Slots))
		q.bound.Store(seen.Full)
		q.rated.Store(seen.Rate > 0)
		if len(sbs) == 0 && seen.Deferred {
			// A per-key limit or rate deferred every job of the batch: the
			// lane may hold more (other keys' jobs behind them), and no
			// wake comes for them. It claims again at once.
			continue
		}
		if len(sbs) == 0 {
			q.short.Store(false)
			if seen.TakenBy != 0 && seen.TakenBy != owner && p.cfg.Yield > 0 {
				// Another process took what this claim was woken for.
				yield = min(max(2*yield, time.Millisecond), p.cfg.Yield)
			}
			wait := idle
			if seen.Full {
				// The limit is held by other processes, or the rate's
				// window is full: an announcement (a job inserted, a
				// batch released, the limit changed) is answered after a
				// whole yield, not at once by every process held back;
				// this one's own jobs ending wake it at once, and the
				// rate's window has room again after RetryIn.
				yield = p.cfg.Yield
				// Held back, it looks again at least every Poll, without
				// the idle queue's backoff: the slots of a process whose
				// lease runs out come back with no announcement.
				wait = p.cfg.Poll
				if seen.RetryIn > 0 {
					wait = min(seen.RetryIn, wait)
				}
			}
			// Nothing to claim: wait for a notification, polling as a
			// fallback, less often the longer the queue stays idle.
			var ok bool
			next, ok, pk := p.idle(q, wait, yield)
			if !ok {
				return
			}
			// Another process took the batch a claim of a limited queue
			// was woken for: the queue is busy, and this process gathers
			// too, from its own claim, rather than answer the next
			// announcement at once. The processes' claims then stay
			// spread over the gather rather than fall together (the mix
			// at 800/s with both limits: start p99 38-39 ms against 51-54,
			// peeks 60 a thousand jobs against 97-100, Postgres CPU
			// 93-96% against 101%).
			if (seen.Limit > 0 || seen.Rate > 0 || q.keyed.Load()) && !seen.Full && seen.TakenBy != 0 && seen.TakenBy != owner {
				if !p.gather(start) {
					return
				}
			}
			peek = pk
			if wait == idle {
				idle = next
			}
			continue
		}
		idle = p.cfg.Poll
		n, bytes, keyed := 0, 0, false
		for _, sb := range sbs {
			n += len(sb.Jobs)
			for _, j := range sb.Jobs {
				bytes += len(j.Args)
				keyed = keyed || j.Key != ""
			}
		}
		// A claim that found jobs halves the yield (below a millisecond:
		// none) rather than end it: a process that wins one announcement
		// in four still peeks at the next rather than claim at once and
		// find it taken (the full mix at 800 jobs/s in four processes:
		// 4,900 empty claims instead of 6,600, the claim lock waited for
		// 5 s instead of 15-22 s of 33). A limited queue's ends it, as
		// before: its claims answer slots freed elsewhere at once.
		if yield /= 2; yield < time.Millisecond || seen.Limit > 0 || seen.Rate > 0 || keyed {
			yield = 0
		}
		q.keyed.Store(keyed)
		q.held.Add(int64(n))
		// A rate-limited claim that took all its idle workers allowed may
		// have left jobs waiting: a job ending wakes the claimer.
		q.short.Store(q.rated.Load() && lim.MaxJobs < maxJobs && n >= lim.MaxJobs)
		// One new batch below both caps took all its queue had in the
		// claim's snapshot: whatever commits after it wakes this claimer
		// (the local insert's wake, or a notification after the commit).
		// The claimer then waits for that wake rather than claim again at
		// once and find nothing (at 800 jobs/s a third of all claims).
		// After an adopted batch, several lanes, a claim at either cap or
		// the replay of a claim whose reply was lost, more may be waiting
		// with no wake to come: it claims again.
		// A claim whose per-key limits deferred jobs took fewer than its
		// batch: it claims again.
		drained := !replay && !seen.Deferred && len(sbs) == 1 && sbs[0].Token == sbs[0].TickID && n < lim.MaxJobs && int64(bytes) < lim.MaxBytes/2
		if p.cfg.OnClaim != nil {
			p.cfg.OnClaim(q.name, time.Since(start), n)
		}
		// Batches come in lane order (priority, the starving first); run
		// each batch's jobs in commit order.
		marked := lim.Start
		var rest []item // the jobs the claim did not mark, in order
		for _, sb := range sbs {
			b := &batch{Batch: sb, owner: owner}
			b.remaining.Store(int32(len(sb.Jobs)))
			for _, j := range sb.Jobs {
				if j.Key != "" {
					q.keys.claimed(j.Key, int(j.KeySlots))
				}
				if j.Cancelled {
					// Cancelled before it ran: ack it so, never run it.
					p.ack(b, storage.Ack{Batch: sb, Job: &j, State: storage.AckCancelled, Finished: p.cfg.Now()})
					if j.Key != "" {
						q.keys.drop(j.Key)
					}
					p.free(q)
					continue
				}
				it := item{batch: b, job: j}
				// The claim marked the first of its jobs that do not wait
				// for a slot of their key started, as many as lim.Start.
				claimMarked := marked > 0 && !j.KeyWaits
				if claimMarked {
					marked--
				}
				if j.Key != "" {
					// Its key's slot is counted here, in the claim's order:
					// a job that waits for one is parked, no worker needed.
					// (One the claim marked parks only when the process's
					// own view has no free slot for it, which the claim's
					// count of its jobs in hand rules out.)
					if !q.keys.admit(it) {
						continue
					}
					it.admitted = true
				}
				if claimMarked {
					// Handed to a worker waiting now, it starts at once, as
					// the claim recorded. None waits when a worker counted
					// idle had just taken a job: then the job waits in the
					// buffer and asks the marker, whose fence keeps it from
					// starting if its batch is released meanwhile.
					select {
					case q.start <- item{batch: b, job: j, started: true, admitted: it.admitted}:
						// The worker is busy from here: counted out of the
						// idle ones by this goroutine, before its next claim
						// reads them (counted by the worker, a claim made
						// at once could read it idle and mark a start for a
						// job no worker was waiting for).
						q.idle.Add(-1)
						continue
					default:
					}
				}
				rest = append(rest, it)
			}
		}
		if !p.handOut(ctx, q, owner, rest, seen.Limit == 0 && seen.Rate == 0) {
			return // the rest stay unacked: released with the lease
		}
		if drained {
			var ok bool
			if idle, ok, peek = p.idle(q, p.cfg.Poll, 0); !ok {
				return
			}
			// A limited queue's claim that took all its queue had (no
			// limit bound it) gathers: the jobs announced within Gather
			// of it wait for one claim together. Each limited claim reads
			// and writes the process's slots and key map, about twice a
			// plain claim's work, for one or two jobs at a steady rate.
			if limited := seen.Limit > 0 || seen.Rate > 0 || keyed; limited && !seen.Full {
				if !p.gather(start) {
					return
				}
			}
		}
	}
}

// gather waits until Gather after start, when the queue's last claim was
// sent; false when the pool stops.
func (p *Pool) gather(start time.Time) bool {
	d := p.cfg.Gather - time.Since(start)
	if p.cfg.Gather <= 0 || d <= 0 {
		return true
	}
	p.gathered.Fire(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.claimCtx.Done():
		return false
	case <-t.C:
		return true
	}
}

// handOut gives rest, the jobs of a claim that it did not mark started,
// to q's workers, in order. With mark (a queue with no limit), the first
// as many as there are idle workers now are marked started in one call
// and handed to them: a claim's marks count the workers idle when it was
// sent, and the workers that were busy then (a job handed out by the
// previous claim, a job that ended meanwhile) are mostly idle when its
// reply comes; marked here, they start without a mark each (one commit
// for them all, not one per round of the marker). The rest, and a job no
// worker took at once, wait in the buffer and are marked as they start.
// false: the pool is stopping.
func (p *Pool) handOut(ctx context.Context, q *queue, owner int32, rest []item, mark bool) bool {
	if k := min(int(q.idle.Load()), len(rest)); mark && k > 0 {
		starts := make([]storage.Start, k)
		for i := range rest[:k] {
			starts[i] = storage.Start{Batch: rest[i].batch.Batch, Job: &rest[i].job}
		}
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fenced, err := p.cfg.Store.MarkStarted(mctx, owner, starts)
		cancel()
		for i := range rest[:k] {
			if err != nil || slices.Contains(fenced, rest[i].batch.TickID) {
				break // unmarked: its worker's own mark retries, or finds it fenced
			}
			it := rest[i]
			it.started = true
			select {
			case q.start <- it:
				q.idle.Add(-1) // busy from here, as after the claim's own marks
				rest[i].batch = nil
			default:
			}
		}
	}
	for _, it := range rest {
		if it.batch == nil {
			continue // handed out marked
		}
		select {
		case q.jobs <- it:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// idle waits, after a claim that found nothing, until the queue may have
// work: a wake-up (Wake, or WakeRemote followed by yield), or the end of the fallback wait, which
// doubles from Poll up to MaxPoll while nothing comes. Once the wait is
// ProbeFrom or longer, its end does not lead to a claim at once: the
// prober asks the database, in one statement for every queue waiting so,
// whether the queue has any job row or released batch, and the wait
// starts again (doubled, up to MaxPoll) when it has none. 1,000 idle
// queues cost one statement a second rather than a claim transaction
// each every MaxPoll. It returns the wait to use after the next empty
// claim, false when the pool stops, and whether the wake-up was an
// announcement answered after a whole yield (the claimer peeks first).
func (p *Pool) idle(q *queue, wait, yield time.Duration) (time.Duration, bool, bool) {
	ctx := p.claimCtx
	maxWait := max(p.cfg.MaxPoll, p.cfg.Poll)
	for {
		p.idleWait.Fire(wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, false, false
		case <-q.wake:
			t.Stop()
			return p.cfg.Poll, true, false
		case <-q.heard:
			t.Stop()
			ok, whole := p.yield(q, yield)
			return p.cfg.Poll, ok, whole
		case <-t.C:
		}
		ask := wait >= p.cfg.ProbeFrom
		wait = min(wait*2, maxWait)
		if !ask {
			return wait, true, false
		}
		pr := probe{queue: q.name, work: make(chan bool, 1)}
		select {
		case <-ctx.Done():
			return 0, false, false
		case <-q.wake:
			return p.cfg.Poll, true, false
		case <-q.heard:
			ok, whole := p.yield(q, yield)
			return p.cfg.Poll, ok, whole
		case p.probes <- pr:
		}
		select {
		case <-ctx.Done():
			return 0, false, false
		case <-q.wake:
			return p.cfg.Poll, true, false
		case <-q.heard:
			ok, whole := p.yield(q, yield)
			return p.cfg.Poll, ok, whole
		case work := <-pr.work:
			if work {
				return wait, true, false
			}
		}
	}
}

// yield waits d before a claim answers another process's announcement
// (a local wake-up ends it at once); false when the pool stops, and
// whether it waited all of d (d > 0 and no local wake-up came).
func (p *Pool) yield(q *queue, d time.Duration) (bool, bool) {
	if d <= 0 {
		return true, false
	}
	p.yielded.Fire(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.claimCtx.Done():
		return false, false
	case <-q.wake:
		return true, false
	case <-t.C:
		return true, true
	}
}

// probe asks the prober whether queue may have work; the answer comes on
// work (buffered: the prober never waits for the asker).
type probe struct {
	queue string
	work  chan bool
}

// prober answers the long-idle claimers' probes, in rounds: the first
// question starts a round, which gathers the questions that come within
// ProbeFrom and asks the database about all their queues at once. A
// failed query answers yes: the claims then find out for themselves.
func (p *Pool) prober() {
	ctx := p.claimCtx
	for {
		var first probe
		select {
		case <-ctx.Done():
			return
		case first = <-p.probes:
		}
		round := map[string][]chan bool{first.queue: {first.work}}
		t := time.NewTimer(p.cfg.ProbeFrom)
	gather:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case pr := <-p.probes:
				round[pr.queue] = append(round[pr.queue], pr.work)
			case <-t.C:
				break gather
			}
		}
		names := make([]string, 0, len(round))
		for name := range round {
			names = append(names, name)
		}
		slices.Sort(names)
		p.probed.Fire(names)
		with, err := p.cfg.Store.QueuesWithWork(ctx, names)
		if err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("millrace: asking which idle queues have work failed; they claim instead", "queues", len(names), "err", err)
		}
		has := make(map[string]bool, len(with))
		for _, name := range with {
			has[name] = true
		}
		for name, asked := range round {
			work := err != nil || has[name]
			for _, c := range asked {
				c <- work
			}
		}
	}
}
