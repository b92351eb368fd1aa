package pool

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
)

// TestWakeWakesAWaitingClaimer: a claimer that found nothing waits until
// it is woken (Poll is an hour here): a job committed meanwhile runs once
// Wake names its queue, and again once WakeAll wakes every claimer.
func TestWakeWakesAWaitingClaimer(t *testing.T) {
	e := newEnv(t)
	started := make(chan int64, 4)
	p := e.pool(Config{Poll: time.Hour, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		return nil
	}})
	e.start(p)
	for round, wake := range []func(){func() { p.Wake("q") }, p.WakeAll} {
		// The claimer's claim found nothing: it waits for a wake-up. A job
		// enqueued now is not in that claim's snapshot.
		e.waitFor("the claimer to find nothing", func() bool { return e.trace.emptyClaims() > round })
		id := e.enqueue()
		p.Wake("no such queue") // a queue the pool does not work: nothing happens
		wake()
		select {
		case got := <-started:
			if got != id {
				t.Fatalf("round %d: job %d started, want %d", round, got, id)
			}
		case <-time.After(wait):
			t.Fatalf("round %d: job %d did not start once the claimer was woken", round, id)
		}
	}
}

// TestADrainedClaimWaitsForAWake: a claim that took one new batch below
// its caps took everything its queue had in the claim's snapshot; the
// claimer then waits for a wake-up (whatever commits later brings one)
// rather than claim again at once and find nothing. A claim at its cap
// is followed by another at once.
func TestADrainedClaimWaitsForAWake(t *testing.T) {
	e := newEnv(t)
	started := make(chan int64, 8)
	p := e.pool(Config{Poll: time.Hour, MaxBatchJobs: 2, Queues: map[string]int{"q": 4}, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		return nil
	}})
	p.idleWait.Arm()
	e.start(p)
	if w := p.idleWait.Wait(t, wait); w != time.Hour {
		t.Fatalf("the first empty claim's wait: %v", w)
	}
	claims := func() int { return len(e.trace.claims()) }
	if n := claims(); n != 1 {
		t.Fatalf("%d claims before any job; want 1", n)
	}
	id := e.enqueue()
	p.Wake("q")
	if got := next(t, started, "the job to start"); got != id {
		t.Fatalf("job %d started, want %d", got, id)
	}
	// The claimer now waits (Poll, an hour) without another claim.
	if w := p.idleWait.Wait(t, wait); w != time.Hour {
		t.Fatalf("the wait after the job's claim: %v", w)
	}
	if n, empty := claims(), e.trace.emptyClaims(); n != 2 || empty != 1 {
		t.Fatalf("after one job: %d claims, %d of them empty; want 2 and 1 (no claim after the job's)", n, empty)
	}
	// Three jobs, a cap of two: the full claim is followed by another at
	// once, which takes the third and drains the queue.
	ids := []int64{e.enqueue(), e.enqueue(), e.enqueue()}
	p.Wake("q")
	for range ids {
		next(t, started, "the three jobs to start")
	}
	if w := p.idleWait.Wait(t, wait); w != time.Hour {
		t.Fatalf("the wait after the three jobs: %v", w)
	}
	if n, empty := claims(), e.trace.emptyClaims(); n != 4 || empty != 1 {
		t.Fatalf("after three jobs with a cap of two: %d claims, %d of them empty; want 4 and 1", n, empty)
	}
}

// holdingPool starts a pool of queue q with workers workers whose first
// hold jobs keep their workers until release is closed (or the pool
// stops: a failed test's jobs then end); each job's id goes to started as
// it starts. It returns once every worker is idle and the claimer's first
// claim found nothing.
func holdingPool(e *env, workers int, hold int32) (p *Pool, started chan int64, release chan struct{}) {
	e.t.Helper()
	started = make(chan int64, 8)
	release = make(chan struct{})
	var n atomic.Int32
	p = e.pool(Config{Poll: time.Hour, Queues: map[string]int{"q": workers}, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		if n.Add(1) <= hold {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}})
	e.start(p)
	q := p.queues["q"]
	e.waitFor("the idle workers and the claimer's empty claim", func() bool {
		return q.idle.Load() == int32(workers) && e.trace.emptyClaims() == 1
	})
	return p, started, release
}

// TestClaimMarksTheStartsOfJobsForIdleWorkers: the claim passes the
// number of idle workers and records the starts of the jobs they take at
// once (no start mark of their own); a job that waits in the process for
// a busy worker is marked through the marker when it starts.
func TestClaimMarksTheStartsOfJobsForIdleWorkers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var first atomic.Int64
	// The first job to start blocks its worker, whichever it is: its id is
	// known only once enqueue returns, and a notification can have it
	// claimed and started before that.
	p, started, release := holdingPool(e, 1, 1)
	first.Store(e.enqueue())
	p.Wake("q")
	if got := next(t, started, "a job to start"); got != first.Load() {
		t.Fatalf("job %d started, want %d", got, first.Load())
	}
	claims := func() []traced {
		var out []traced
		for _, c := range e.trace.claims() {
			if c.rows > 0 {
				out = append(out, c)
			}
		}
		return out
	}
	startArg := func(c traced) int { return c.args[7].(int) }
	if c := claims(); len(c) != 1 || startArg(c[0]) != 1 {
		t.Fatalf("claims that returned jobs: %+v; want one, asked to mark 1 start (one idle worker)", c)
	}
	if m := e.trace.calls("mark_started"); len(m) != 0 {
		t.Fatalf("a start mark was written for a job the claim marked: %+v", m)
	}
	var marks int
	// Every job the claim took went to an idle worker: the claim marked
	// its batch started as a whole, on its tick, and wrote no start row.
	if err := e.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM millrace.start WHERE $1 = ANY (jobs)) * 10
		+ (SELECT count(*) FROM millrace.open_batches() o JOIN millrace.tick t ON t.tick_id = o.tick_id AND NOT t.carried
		   WHERE t.started AND $1 IN (SELECT b.id FROM millrace.batch_jobs(o.tick_id) b))`, first.Load()).Scan(&marks); err != nil {
		t.Fatal(err)
	}
	if marks != 1 {
		t.Fatalf("job %d: %d start rows and %d batches marked started as a whole while it runs, want 0 and 1", first.Load(), marks/10, marks%10)
	}

	// The worker is busy: the next job waits in the process, unmarked.
	second := e.enqueue()
	p.Wake("q")
	e.waitFor("the second job's claim", func() bool { return len(claims()) == 2 })
	if c := claims()[1]; startArg(c) != 0 {
		t.Fatalf("the claim made while the only worker was busy asked to mark %d starts, want 0", startArg(c))
	}
	close(release)
	if got := next(t, started, "a job to start"); got != second {
		t.Fatalf("job %d started, want %d", got, second)
	}
	m := e.trace.calls("mark_started")
	if len(m) != 1 || !slices.Equal(m[0].args[3].([]int64), []int64{second}) {
		t.Fatalf("start marks written: %+v; want one, for job %d", m, second)
	}
}

// TestAClaimTakesNoMoreThanMostlyIdleWorkersStart: with most workers
// idle, a claim takes only as many jobs as they start at once, so that its
// batch is marked started as a whole on its tick: no start row, no mark of
// a job's own.
func TestAClaimTakesNoMoreThanMostlyIdleWorkersStart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, started, release := holdingPool(e, 4, 1) // the first job holds its worker
	defer close(release)
	q := p.queues["q"]
	e.enqueue()
	p.Wake("q")
	next(t, started, "the first job to start")
	e.waitFor("one worker busy", func() bool { return q.idle.Load() == 3 })

	before := len(e.trace.claims())
	ids := []int64{e.enqueue(), e.enqueue(), e.enqueue()}
	p.Wake("q")
	for range ids {
		next(t, started, "a job to start")
	}
	c := e.trace.claims()[before]
	if max, start := c.args[4].(int), c.args[7].(int); max != 3 || start != 3 || c.rows != 3 {
		t.Fatalf("the claim with 3 of 4 workers idle asked for at most %d jobs, %d starts marked, and took %d; want 3, 3, 3", max, start, c.rows)
	}
	var rows, whole int
	if err := e.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM millrace.start WHERE jobs && $1::bigint[]),
		(SELECT count(*) FROM millrace.tick t WHERE t.started AND NOT t.carried
		   AND EXISTS (SELECT 1 FROM millrace.batch_jobs(t.tick_id) b WHERE b.id = ANY ($1::bigint[])))`, ids).Scan(&rows, &whole); err != nil {
		t.Fatal(err)
	}
	if rows != 0 || whole != 1 {
		t.Fatalf("jobs %v: %d start rows and %d batches marked started as a whole, want 0 and 1", ids, rows, whole)
	}
	if m := e.trace.calls("mark_started"); len(m) != 0 {
		t.Fatalf("start marks written: %+v; want none", m)
	}
}

// TestAClaimMarksForTheWorkersIdleAtItsReply: a claim sent while every
// worker was busy marks no start; when its reply comes, the workers freed
// meanwhile get its jobs marked started in one statement for them all,
// before they run (not one mark per worker through the marker).
func TestAClaimMarksForTheWorkersIdleAtItsReply(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p, started, release := holdingPool(e, 2, 2) // the first two jobs hold both workers
	q := p.queues["q"]
	e.enqueue()
	e.enqueue()
	p.Wake("q")
	next(t, started, "the first job to start")
	next(t, started, "the second job to start")
	e.waitFor("both workers busy", func() bool { return q.idle.Load() == 0 })

	// The next claim waits for the queue's claim lock, held by a second
	// session, while both workers end their jobs.
	blocker, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, "SELECT pg_advisory_xact_lock(millrace.claim_space(), hashtext('q'))"); err != nil {
		t.Fatal(err)
	}
	third, fourth := e.enqueue(), e.enqueue()
	claimsBefore := len(e.trace.claims())
	p.Wake("q")
	e.waitFor("the claim to wait for the lock", func() bool {
		var n int
		err := e.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%millrace.claim%'`).Scan(&n)
		return err == nil && n == 1
	})
	close(release)
	e.waitFor("both workers idle", func() bool { return q.idle.Load() == 2 })
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got := []int64{next(t, started, "the third job to start"), next(t, started, "the fourth job to start")}
	slices.Sort(got)
	if !slices.Equal(got, []int64{third, fourth}) {
		t.Fatalf("jobs %v started, want %d and %d", got, third, fourth)
	}
	c := e.trace.claims()[claimsBefore]
	if s := c.args[7].(int); s != 0 || c.rows != 2 {
		t.Fatalf("the claim sent while both workers were busy asked to mark %d starts and took %d jobs, want 0 and 2", s, c.rows)
	}
	m := e.trace.calls("mark_started")
	if len(m) == 0 {
		t.Fatal("no start mark was written for the jobs the claim did not mark")
	}
	if ids := m[0].args[3].([]int64); !slices.Equal(ids, []int64{third, fourth}) {
		t.Fatalf("the first start mark after the claim named jobs %v, want both %d and %d in one statement (all marks: %+v)", ids, third, fourth, m)
	}
}

// TestAnIdleQueuePollsLessAndLess: a claimer that keeps finding nothing
// waits Poll, then twice that, and so on up to MaxPoll (what an idle queue
// costs); a wake-up, or a claim that finds a job, starts it again at Poll.
func TestAnIdleQueuePollsLessAndLess(t *testing.T) {
	e := newEnv(t)
	started := make(chan int64, 4)
	const poll, maxPoll = 5 * time.Millisecond, 40 * time.Millisecond
	p := e.pool(Config{Poll: poll, MaxPoll: maxPoll, Handle: func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		return nil
	}})
	p.idleWait.Arm()
	e.start(p)
	waits := func(n int) []time.Duration {
		var got []time.Duration
		for range n {
			got = append(got, p.idleWait.Wait(t, wait))
		}
		return got
	}
	want := []time.Duration{poll, 2 * poll, 4 * poll, maxPoll, maxPoll, maxPoll}
	if got := waits(len(want)); !slices.Equal(got, want) {
		t.Fatalf("an idle queue's waits: %v; want %v", got, want)
	}
	// A wake-up (a notification) starts the backoff again.
	p.Wake("q")
	backAtPoll(t, p, "after a wake-up", maxPoll)
	if got, want := waits(2), []time.Duration{2 * poll, 4 * poll}; !slices.Equal(got, want) {
		t.Fatalf("after a wake-up: %v; want %v", got, want)
	}
	// So does a claim that finds a job.
	id := e.enqueue()
	if got := <-started; got != id {
		t.Fatalf("job %d started, want %d", got, id)
	}
	backAtPoll(t, p, "after a claim that found a job", maxPoll)
}

// backAtPoll waits for the claimer's next wait to be Poll again, the waits
// chosen before the event (MaxPoll) aside.
func backAtPoll(t *testing.T, p *Pool, what string, maxPoll time.Duration) {
	t.Helper()
	for {
		switch w := p.idleWait.Wait(t, wait); w {
		case p.cfg.Poll:
			return
		case maxPoll:
		default:
			t.Fatalf("%s: a wait of %v; want %v", what, w, p.cfg.Poll)
		}
	}
}

// TestIdleQueuesAskOnceForAll: queues whose fallback wait has backed off
// to ProbeFrom or more stop claiming on their own; the prober asks the
// database about all of them in one statement a round, and a queue with
// no job row makes no claim at all. A job committed without a
// notification is still found, by the prober's round, and runs.
func TestIdleQueuesAskOnceForAll(t *testing.T) {
	e := newEnv(t)
	started := make(chan int64, 1)
	queues := map[string]int{}
	for i := range 20 {
		queues[fmt.Sprintf("q%02d", i)] = 1
	}
	p := e.pool(Config{Queues: queues, Poll: 5 * time.Millisecond, MaxPoll: 80 * time.Millisecond, ProbeFrom: 20 * time.Millisecond,
		Handle: func(ctx context.Context, run *Run) error {
			started <- run.Job.ID
			return nil
		}})
	p.probed.Arm()
	e.start(p)
	// allAsked waits for rounds until every queue was named in one, and
	// returns the most named by one round. A queue asks only once its
	// claims found nothing for a while; it claims again only when told
	// it may have work, or woken.
	allAsked := func() int {
		asked, most := map[string]bool{}, 0
		for len(asked) < len(queues) {
			round := p.probed.Wait(t, wait)
			most = max(most, len(round))
			for _, q := range round {
				asked[q] = true
			}
		}
		return most
	}
	most := allAsked()
	claims := len(e.trace.claims())
	most = max(most, allAsked())
	if n := len(e.trace.claims()); n != claims {
		t.Fatalf("%d claims while every queue was asked about (%d before); want none", n-claims, claims)
	}
	if most < 2 {
		t.Fatalf("rounds named at most %d queue; want one statement for many", most)
	}
	// A round is announced (probed) before its statement runs: the last
	// one's may still be in flight.
	e.waitFor("two rounds to ask the database", func() bool { return len(e.trace.calls("queues_with_work")) >= 2 })
	// A job committed without a notification: the next round finds it.
	id, err := e.store.Enqueue(context.Background(), e.db, storage.NewJob{Queue: "q07", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-started:
		if got != id {
			t.Fatalf("job %d started, want %d", got, id)
		}
	case <-time.After(wait):
		t.Fatalf("job %d, committed without a notification to an idle queue, did not start within %s", id, wait)
	}
}

// claimsBy counts the claims of process owner so far.
func claimsBy(e *env, owner int32) int {
	n := 0
	for _, c := range e.trace.claims() {
		if c.args[1].(int32) == owner {
			n++
		}
	}
	return n
}

// answersBy counts the claims of process owner and every peek: the
// answers to announcements. Only the process that loses them peeks (a
// claimer peeks only after a whole yield), so the tests that call it have
// one loser, owner.
func answersBy(e *env, owner int32) int {
	return claimsBy(e, owner) + len(e.trace.calls("claim_peek"))
}

// TestALoserOfAnnouncementsYields: two processes hear every announcement
// (WakeRemote) and the first claim takes the job. A claimer whose claims
// keep finding the other's batch waits before it answers the next ones
// (up to Yield), so the announcements it hears meanwhile cost one claim,
// not one each; every job still runs once. With Yield off (logged for
// comparison: under -race 393-398 claims, fewer without it, where a fast
// loop lets announcements meet a claim in flight), each announcement
// costs a claim in each process. TestAYieldAbsorbsAnnouncements holds
// the mechanism itself.
func TestALoserOfAnnouncementsYields(t *testing.T) {
	for _, yield := range []time.Duration{200 * time.Millisecond, -1} {
		t.Run(fmt.Sprint("yield=", yield), func(t *testing.T) {
			e := newEnv(t)
			ran := make(chan int64, 100)
			handle := func(ctx context.Context, run *Run) error {
				ran <- run.Job.ID
				return nil
			}
			// Four workers: a claim of one job is below its cap (a batch at
			// its cap sends the next claim to look at the lane).
			a := e.pool(Config{Poll: time.Hour, Yield: yield, Handle: handle, Queues: map[string]int{"q": 4}})
			b := e.pool(Config{Poll: time.Hour, Yield: yield, Handle: handle, Queues: map[string]int{"q": 4}})
			b.SetOwner(e.register())
			e.start(a)
			e.start(b)
			e.waitFor("both claimers to find nothing", func() bool { return e.trace.emptyClaims() >= 2 })
			before := len(e.trace.claims())
			const jobs = 200
			seen := map[int64]int{}
			for range jobs {
				id := e.enqueue()
				a.WakeRemote("q")
				b.WakeRemote("q")
				got := next(t, ran, "the announced job to run")
				seen[got]++
				if got != id {
					t.Fatalf("job %d ran, want %d", got, id)
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("job %d ran %d times", id, n)
				}
			}
			// Let the claims still owed to the last announcements happen.
			e.waitFor("both claimers to wait again", func() bool {
				return len(e.trace.claims()) >= before+jobs
			})
			claims := len(e.trace.claims()) - before
			t.Logf("%d announcements heard by two processes: %d claims (%d by the first, %d by the second), %d peeks",
				jobs, claims, claimsBy(e, e.owner), claimsBy(e, b.Owner()), len(e.trace.calls("claim_peek")))
			// Measured under -race: 208-275 with a yield, 393-398 without.
			if yield > 0 && claims > jobs*8/5 {
				t.Fatalf("%d claims for %d announcements heard by two processes; want at most %d (the loser yields)", claims, jobs, jobs*8/5)
			}
		})
	}
}

// TestAWinKeepsHalfTheYield: a process that lost two announcements to
// another (its yield 2 ms) and then claimed a batch at its cap (one job,
// one worker: it claims again at once, finding its own batch) keeps half
// its yield: the next announcement the other takes is answered by a peek
// after that yield, not by a claim at once that finds it taken.
func TestAWinKeepsHalfTheYield(t *testing.T) {
	e := newEnv(t)
	ran := make(chan int64, 8)
	handle := func(ctx context.Context, run *Run) error {
		ran <- run.Job.ID
		return nil
	}
	a := e.pool(Config{Poll: time.Hour, Yield: 200 * time.Millisecond, Handle: handle, Queues: map[string]int{"q": 1}})
	b := e.pool(Config{Poll: time.Hour, Yield: 200 * time.Millisecond, Handle: handle, Queues: map[string]int{"q": 4}})
	b.SetOwner(e.register())
	e.start(a)
	e.start(b)
	e.waitFor("both claimers to find nothing", func() bool { return e.trace.emptyClaims() >= 2 })
	answers := func() int { return answersBy(e, e.owner) }
	// b takes a job; a hears of it and answers (a claim, then a peek).
	lose := func() {
		t.Helper()
		id := e.enqueue()
		b.Wake("q")
		if got := next(t, ran, "b's job to run"); got != id {
			t.Fatalf("job %d ran, want %d", got, id)
		}
		before := answers()
		a.WakeRemote("q")
		e.waitFor("a's answer", func() bool { return answers() == before+1 })
	}
	lose()
	lose()
	id := e.enqueue()
	a.Wake("q")
	if got := next(t, ran, "a's own job to run"); got != id {
		t.Fatalf("job %d ran, want %d", got, id)
	}
	// Its start's, the first announcement's, its job's and the one after.
	e.waitFor("a's claims", func() bool { return claimsBy(e, e.owner) == 4 })
	claims, peeks := claimsBy(e, e.owner), len(e.trace.calls("claim_peek"))
	lose()
	if c, p := claimsBy(e, e.owner)-claims, len(e.trace.calls("claim_peek"))-peeks; c != 0 || p != 1 {
		t.Fatalf("after a win, a answered an announcement b took with %d claims and %d peeks; want 0 and 1", c, p)
	}
}

// TestAYieldingClaimerStillAnswers: a job that the process winning the
// announcements cannot take (its two workers are busy and a job waits in
// its buffer) is taken by the process that has been yielding, within its
// yield: a yield delays an answer, never drops it.
func TestAYieldingClaimerStillAnswers(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	type start struct {
		pool string
		id   int64
	}
	started := make(chan start, 100)
	handle := func(name string) Handler {
		return func(ctx context.Context, run *Run) error {
			started <- start{name, run.Job.ID}
			if name == "a" {
				<-release
			}
			return nil
		}
	}
	a := e.pool(Config{Poll: time.Hour, Handle: handle("a"), Queues: map[string]int{"q": 2}})
	b := e.pool(Config{Poll: time.Hour, Yield: 100 * time.Millisecond, Handle: handle("b")})
	b.SetOwner(e.register())
	b.yielded.Arm()
	e.startBoth(a, b)
	defer close(release)
	// takes counts a's claims that returned a job.
	takes := func() int {
		n := 0
		for _, c := range e.trace.claims() {
			if c.args[1].(int32) == e.owner && c.rows > 0 {
				n++
			}
		}
		return n
	}
	// a takes the first job and runs it until released; b, woken after,
	// finds a's batch, and yields at the next announcement.
	first := e.enqueue()
	a.WakeRemote("q")
	if got := next(t, started, "a to start the first job"); got != (start{"a", first}) {
		t.Fatalf("started %+v, want a's run of %d", got, first)
	}
	b.WakeRemote("q")
	e.waitFor("b to claim after a", func() bool { return claimsBy(e, b.Owner()) >= 2 })
	c := answersBy(e, b.Owner())
	b.WakeRemote("q")
	if d := b.yielded.Wait(t, wait); d <= 0 {
		t.Fatalf("b yielded %v", d)
	}
	// The answer (a peek) that ends the yield, before any other job is
	// enqueued (it would take it).
	e.waitFor("b's answer after its yield", func() bool { return answersBy(e, b.Owner()) > c })
	// The second job takes a's other worker; the third waits in a's
	// buffer.
	second := e.enqueue()
	a.WakeRemote("q")
	if got := next(t, started, "a to start the second job"); got != (start{"a", second}) {
		t.Fatalf("started %+v, want a's run of %d", got, second)
	}
	third := e.enqueue()
	a.WakeRemote("q")
	e.waitFor("a to buffer the third job", func() bool { return takes() >= 3 })
	// The fourth: a cannot take it (its buffer is not empty); b answers
	// after its yield and runs it.
	fourth := e.enqueue()
	a.WakeRemote("q")
	b.WakeRemote("q")
	if got := next(t, started, "b to start the fourth job"); got != (start{"b", fourth}) {
		t.Fatalf("started %+v, want b's run of %d (the third, %d, waits in a's buffer)", got, fourth, third)
	}
}

// TestAYieldAbsorbsAnnouncements: a claimer that has lost announcements
// many times waits its whole yield (Yield, here a second) before it
// answers the next one, and the announcements it hears meanwhile cost no
// answer of their own. An answer after a whole yield is a peek, not a
// claim, when the other process's batch already holds the job: after its
// first loss (no yield yet), b makes no claim at all.
func TestAYieldAbsorbsAnnouncements(t *testing.T) {
	e := newEnv(t)
	ran := make(chan int64, 100)
	handle := func(ctx context.Context, run *Run) error {
		ran <- run.Job.ID
		return nil
	}
	a := e.pool(Config{Poll: time.Hour, Handle: handle, Queues: map[string]int{"q": 4}})
	b := e.pool(Config{Poll: time.Hour, Yield: time.Second, Handle: handle, Queues: map[string]int{"q": 4}})
	b.SetOwner(e.register())
	e.startBoth(a, b)
	// b loses eleven times: a takes each job, then b hears of it and
	// finds a's batch. Its yield doubles each time, from 1 ms to the cap.
	var claimed int
	for i := range 11 {
		id := e.enqueue()
		a.WakeRemote("q")
		if got := next(t, ran, "a to run the job"); got != id {
			t.Fatalf("job %d ran, want %d", got, id)
		}
		before := answersBy(e, b.Owner())
		b.WakeRemote("q")
		e.waitFor(fmt.Sprintf("b's answer %d", i), func() bool { return answersBy(e, b.Owner()) > before })
		if i == 0 {
			claimed = claimsBy(e, b.Owner())
		}
	}
	if n := claimsBy(e, b.Owner()) - claimed; n != 0 {
		t.Fatalf("b claimed %d times to answer ten announcements after a yield, each already taken by a; want peeks only", n)
	}
	b.yielded.Arm()
	before := answersBy(e, b.Owner())
	b.WakeRemote("q")
	if d := b.yielded.Wait(t, wait); d != time.Second {
		t.Fatalf("b's yield after eleven losses: %v, want the cap (1s)", d)
	}
	for range 5 {
		b.WakeRemote("q") // heard during the yield
	}
	// The yield ends in one claim; the announcements heard meanwhile
	// start the next yield, not a claim each.
	if d := b.yielded.Wait(t, wait); d != time.Second {
		t.Fatalf("b's next yield: %v", d)
	}
	if n := answersBy(e, b.Owner()) - before; n != 1 {
		t.Fatalf("b answered six announcements heard within a yield %d times; want 1", n)
	}
}

// TestALimitedQueueGathersAnnouncements: after a claim that took every
// job of a limited queue, the jobs announced within Gather of it wait for
// one claim together, rather than a claim (and its limit's bookkeeping)
// each.
func TestALimitedQueueGathersAnnouncements(t *testing.T) {
	e := newEnv(t)
	if err := storage.SetLimit(context.Background(), e.db, "q", storage.Limit{Running: 100}); err != nil {
		t.Fatal(err)
	}
	claims := make(chan int, 100)
	ran := make(chan int64, 100)
	p := e.pool(Config{Poll: time.Hour, Gather: time.Second, Queues: map[string]int{"q": 8},
		OnClaim: func(_ string, _ time.Duration, n int) { claims <- n },
		Handle:  func(_ context.Context, run *Run) error { ran <- run.Job.ID; return nil }})
	p.gathered.Arm()
	e.start(p)
	e.waitFor("the first claim to find nothing", func() bool { return e.trace.emptyClaims() >= 1 })
	e.claimOneOn(p, claims)
	next(t, ran, "the first job to run")
	// The next announcement comes within Gather of that claim, which took
	// all the queue had: the claimer waits out the rest of it.
	e.enqueue()
	p.Wake("q")
	if d := p.gathered.Wait(t, wait); d <= 0 || d > time.Second {
		t.Fatalf("the claimer gathered for %v, want a wait of at most Gather (1s)", d)
	}
	for range 3 {
		e.enqueue()
		p.Wake("q")
	}
	if n := next(t, claims, "the gathered claim"); n != 4 {
		t.Fatalf("the jobs announced within Gather were claimed %d in the first claim after it, want all 4", n)
	}
	for range 4 {
		next(t, ran, "a gathered job to run")
	}
}

// TestALimitedQueuesLoserGathersToo: a claim of a limited queue that
// finds the batch it was woken for taken by another process gathers as
// well, from its own claim: the processes' claims stay spread over the
// gather rather than answer each announcement together.
func TestALimitedQueuesLoserGathersToo(t *testing.T) {
	e := newEnv(t)
	if err := storage.SetLimit(context.Background(), e.db, "q", storage.Limit{Running: 100}); err != nil {
		t.Fatal(err)
	}
	handle := func(context.Context, *Run) error { return nil }
	claims := make(chan int, 100)
	a := e.pool(Config{Poll: time.Hour, Gather: time.Second, Handle: handle, Queues: map[string]int{"q": 4},
		OnClaim: func(_ string, _ time.Duration, n int) { claims <- n }})
	b := e.pool(Config{Poll: time.Hour, Gather: time.Second, Handle: handle, Queues: map[string]int{"q": 4}})
	b.SetOwner(e.register())
	b.gathered.Arm()
	e.startBoth(a, b)
	e.claimOneOn(a, claims)
	// b answers the same announcement and finds a's batch.
	before := answersBy(e, b.Owner())
	b.WakeRemote("q")
	e.waitFor("b's answer", func() bool { return answersBy(e, b.Owner()) > before })
	b.WakeRemote("q")
	if d := b.gathered.Wait(t, wait); d <= 0 || d > time.Second {
		t.Fatalf("b gathered for %v after losing the batch, want a wait of at most Gather (1s)", d)
	}
}

// claimOneOn enqueues a job, wakes p's claimer and waits for the claim
// that takes it (claims: p's OnClaim sizes), which must take it alone.
func (e *env) claimOneOn(p *Pool, claims <-chan int) {
	e.t.Helper()
	e.enqueue()
	p.Wake("q")
	if n := next(e.t, claims, "the claim of one job"); n != 1 {
		e.t.Fatalf("the claim took %d jobs, want 1", n)
	}
}

// startBoth starts a, then b once a's first claim found nothing, and
// returns once b's has too: b then loses every announcement a answers
// first.
func (e *env) startBoth(a, b *Pool) {
	e.t.Helper()
	e.start(a)
	e.waitFor("a to find nothing", func() bool { return e.trace.emptyClaims() >= 1 })
	e.start(b)
	e.waitFor("b to find nothing", func() bool { return e.trace.emptyClaims() >= 2 })
}
