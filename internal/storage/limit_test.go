package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace/internal/testkit"
)

// TestLimitIsExactAcrossProcesses: a queue's running limit caps what the
// claims of every process take together. A process's count stands until
// its next claim (a finished job frees its slot for the others then), a
// released batch is adopted whole and counts for its adopter, a raised
// limit takes effect at the next claim, and a process whose lease ran
// out holds nothing.
func TestLimitIsExactAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	s, pool, a, b := limitedQueue(t, "lim", 12, 3)
	req := int64(0)
	held := map[int32]int{}
	claim := func(owner int32) []*Batch {
		t.Helper()
		req++
		h := held[owner]
		bs, seen, err := s.ClaimSeen(ctx, "lim", owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Held: &h})
		if err != nil {
			t.Fatal(err)
		}
		if seen.Limit == 0 {
			t.Fatalf("the claim did not see the queue's limit")
		}
		for _, x := range bs {
			held[owner] += len(x.Jobs)
		}
		return bs
	}
	count := func(bs []*Batch) int {
		n := 0
		for _, x := range bs {
			n += len(x.Jobs)
		}
		return n
	}
	holds := func() int64 {
		t.Helper()
		ls, err := QueueLimits(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != 1 || ls[0].Queue != "lim" {
			t.Fatalf("queue_limits = %+v; want the one limited queue", ls)
		}
		return ls[0].Held
	}
	flushSeq := int64(0)
	finish := func(owner int32, x *Batch, n int) {
		t.Helper()
		flushSeq++
		acks := make([]Ack, n)
		for k := range n {
			acks[k] = Ack{Batch: x, Job: &x.Jobs[k], State: AckCompleted}
		}
		if _, err := s.Flush(ctx, owner, flushSeq, false, acks, nil); err != nil {
			t.Fatal(err)
		}
		held[owner] -= n
	}

	first := claim(a)
	if n := count(first); n != 3 {
		t.Fatalf("a's first claim took %d jobs under a limit of 3", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs while a held the whole limit", n)
	}
	if _, seen := claimJobs(t, s, "lim", b, 999, 0); !seen.Full {
		t.Fatalf("b's claim at the limit: seen %+v; want Full", seen)
	}
	// a finishes two: b may not take them until a says so at its claim.
	finish(a, first[0], 2)
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs before a's next claim counted its finished ones", n)
	}
	if n := count(claim(a)); n != 2 {
		t.Fatalf("a's claim after two finished took %d jobs; want 2", n)
	}
	if h := holds(); h != 3 {
		t.Fatalf("the live processes hold %d; want 3", h)
	}
	// A raised limit: b takes the difference at its next claim.
	if err := SetLimit(ctx, pool, "lim", Limit{Running: 5}); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(b)); n != 2 {
		t.Fatalf("b took %d jobs after the limit went from 3 to 5; want 2", n)
	}
	// a stops and releases its batches (1 + 2 jobs unfinished): b adopts
	// each whole when it fits, and takes nothing past the limit.
	if _, err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(b)); n != 1 {
		t.Fatalf("b's adoption took %d jobs; want a's first batch's 1", n)
	}
	if n := count(claim(b)); n != 2 {
		t.Fatalf("b's second adoption took %d jobs; want a's second batch's 2", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs past the limit", n)
	}
	if h := holds(); h != 5 {
		t.Fatalf("the live processes hold %d; want 5 (b's)", h)
	}
	// A process whose lease runs out holds nothing.
	c, err := s.Register(ctx, "c", "h", 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLimit(ctx, pool, "lim", Limit{Running: 6}); err != nil {
		t.Fatal(err)
	}
	if n := count(claim(c)); n != 1 {
		t.Fatalf("c took %d jobs; want the one slot left", n)
	}
	if n := count(claim(b)); n != 0 {
		t.Fatalf("b took %d jobs while c was alive", n)
	}
	waitDead(t, pool, c)
	if n := count(claim(b)); n != 1 {
		t.Fatalf("b took %d jobs once c was dead; want its slot", n)
	}
	// Cleared: the queue runs as its workers allow.
	if err := SetLimit(ctx, pool, "lim", Limit{Running: 0}); err != nil {
		t.Fatal(err)
	}
	if n, seen := claimJobs(t, s, "lim", b, 1000, held[b]); seen.Limit != 0 || n != 3 {
		t.Fatalf("without a limit b took %d jobs (limit seen %d); want the 3 left", n, seen.Limit)
	}
}

// TestSetLimitRefusesBadValues: a limit is 1 to 1000000, or none.
// TestLimitSlotsAndBuffer: under a running limit a claim gives its caller
// slots (at most the limit less what the live processes hold) and may
// take a buffer beyond them (at most p_buffer, none without slots); the
// caller keeps only the slots it has jobs in hand for, and the slots it
// gives back go to the next claim of another process.
func TestLimitSlotsAndBuffer(t *testing.T) {
	ctx := context.Background()
	s, pool, a, b := limitedQueue(t, "buf", 20, 3)
	req := int64(0)
	claim := func(owner int32, held, maxJobs, buffer int) (int, Seen) {
		t.Helper()
		req++
		bs, seen, err := s.ClaimSeen(ctx, "buf", owner, req, false, Limits{MaxJobs: maxJobs, MaxBytes: 1 << 20, Held: &held, Buffer: buffer})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range bs {
			n += len(x.Jobs)
		}
		return n, seen
	}
	// a: all three slots, and a buffer of 5 more.
	if n, seen := claim(a, 0, 100, 5); n != 8 || seen.Slots != 3 || !seen.Full {
		t.Fatalf("a's first claim took %d jobs, slots %d, full %v; want 8 (3 slots and a buffer of 5), 3, true", n, seen.Slots, seen.Full)
	}
	// b: no slot free, so no buffer either.
	if n, seen := claim(b, 0, 100, 5); n != 0 || seen.Slots != 0 || !seen.Full {
		t.Fatalf("b's claim took %d jobs, slots %d, full %v; want nothing while a holds every slot", n, seen.Slots, seen.Full)
	}
	// a has one job in hand: it keeps one slot, gets none (its other two
	// are free for it again: it takes one job, so holds two).
	if n, seen := claim(a, 1, 1, 0); n != 1 || seen.Slots != 2 {
		t.Fatalf("a's claim with one job in hand took %d, slots %d; want 1 job and 2 slots", n, seen.Slots)
	}
	// The slot a gave back is b's, with a buffer as large as its slots
	// allow (8 per slot) and p_buffer asks.
	if n, seen := claim(b, 0, 100, 5); n != 6 || seen.Slots != 1 {
		t.Fatalf("b's claim took %d jobs, slots %d; want 6 (1 slot, a buffer of 5), 1", n, seen.Slots)
	}
	if ls, err := QueueLimits(ctx, pool); err != nil || len(ls) != 1 || ls[0].Held != 3 {
		t.Fatalf("queue_limits = %+v, %v; want 3 slots held", ls, err)
	}
	// The limit lowered to 1 under 3 held: no claim takes a job, each
	// process keeps the slots of its jobs in hand until they end; then the
	// one slot goes to the next claim, with its buffer.
	if err := SetLimit(ctx, pool, "buf", Limit{Running: 1}); err != nil {
		t.Fatal(err)
	}
	if n, seen := claim(a, 2, 100, 5); n != 0 || seen.Slots != 2 || !seen.Full {
		t.Fatalf("a's claim over the lowered limit took %d, slots %d, full %v; want 0, its 2 kept, true", n, seen.Slots, seen.Full)
	}
	if n, seen := claim(b, 6, 100, 5); n != 0 || seen.Slots != 1 {
		t.Fatalf("b's claim over the lowered limit took %d, slots %d; want 0, its 1 kept", n, seen.Slots)
	}
	if n, seen := claim(a, 0, 100, 5); n != 0 || seen.Slots != 0 {
		t.Fatalf("a's claim with nothing in hand took %d, slots %d; want 0 and its slots given back", n, seen.Slots)
	}
	if n, seen := claim(b, 0, 100, 5); n != 5 || seen.Slots != 1 {
		t.Fatalf("b's claim with nothing in hand took %d, slots %d; want the 5 left (1 slot, a buffer of 4), 1", n, seen.Slots)
	}
}

func TestSetLimitRefusesBadValues(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	for _, n := range []int{-1, 1000001} {
		if err := SetLimit(ctx, pool, "q", Limit{Running: n}); err == nil {
			t.Errorf("SetLimit(%d) was accepted", n)
		}
	}
	if err := SetLimit(ctx, pool, "", Limit{Running: 3}); err == nil {
		t.Error("SetLimit of an empty queue name was accepted")
	}
}

// TestRateLimitCountsClaimsInItsWindow: a queue limited to 3 starts per
// 200ms is claimed 3 jobs at a time, never more within a window
// (rate_window: 220ms) on the server's clock, and a claim of a full
// window says when it has room again.
func TestRateLimitCountsClaimsInItsWindow(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		enqueue(t, s, pool, "rl")
	}
	if err := SetLimit(ctx, pool, "rl", Limit{Rate: 3, Per: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	req := int64(0)
	claim := func() (int, Seen) {
		t.Helper()
		req++
		return claimJobs(t, s, "rl", a, req, 0)
	}
	if n, seen := claim(); n != 3 || seen.Rate != 3 {
		t.Fatalf("the first claim took %d jobs (rate seen %d); want 3", n, seen.Rate)
	}
	n, seen := claim()
	if n != 0 || !seen.Full || seen.RetryIn <= 0 || seen.RetryIn > 220*time.Millisecond {
		t.Fatalf("a claim in the full window took %d jobs, seen %+v; want none, full, room again within 220ms", n, seen)
	}
	got := 3
	testkit.WaitFor(t, "every job to be claimed", 30*time.Second, func() bool {
		n, _ := claim()
		got += n
		return got == 10
	})
	// On the server's clock: no window of 220ms holds more than 3.
	var worst int
	if err := pool.QueryRow(ctx, `SELECT max(w) FROM (SELECT (SELECT sum(y.took) FROM millrace.hold y
		WHERE y.queue = 'rl' AND y.at >= x.at AND y.at < x.at + interval '220 milliseconds') AS w
		FROM millrace.hold x WHERE x.queue = 'rl' AND x.took > 0) z`).Scan(&worst); err != nil {
		t.Fatal(err)
	}
	if worst != 3 {
		t.Fatalf("the most jobs claimed in a window of 220ms was %d; want 3", worst)
	}
}

// TestRateWindowSurvivesTheRing: the claims of a rate's window are carried
// when their slot is reclaimed: a full window stays full.
// TestQueueLimitsCountsTheWindow: queue_limits says how many jobs the
// claims of a rate's current window took, from the claims' running
// totals.
func TestQueueLimitsCountsTheWindow(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLimit(ctx, pool, "rs", Limit{Rate: 5, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 2} { // 3 jobs each time; the rate leaves 2 the second
		for range 3 {
			enqueue(t, s, pool, "rs")
		}
		if n, _ := claimJobs(t, s, "rs", a, int64(i+1), 0); n != want {
			t.Fatalf("claim %d took %d jobs; want %d", i+1, n, want)
		}
	}
	ls, err := QueueLimits(ctx, pool)
	if err != nil || len(ls) != 1 || ls[0].Started != 5 {
		t.Fatalf("queue_limits = %+v, %v; want 5 started in the window", ls, err)
	}
}

func TestRateWindowSurvivesTheRing(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		enqueue(t, s, pool, "rl")
	}
	if err := SetLimit(ctx, pool, "rl", Limit{Rate: 2, Per: time.Hour}); err != nil {
		t.Fatal(err)
	}
	claim := func(req int64) int {
		t.Helper()
		n, _ := claimJobs(t, s, "rl", a, req, 0)
		return n
	}
	if n := claim(1); n != 2 {
		t.Fatalf("the first claim took %d jobs; want 2", n)
	}
	var slot int
	if err := pool.QueryRow(ctx, "SELECT slot FROM millrace.hold WHERE queue = 'rl' AND took > 0").Scan(&slot); err != nil {
		t.Fatal(err)
	}
	// A newer count of what the process holds (its jobs ended), in
	// another slot: the window's row is no longer its newest.
	rotate(t, s, 0)
	if n := claim(2); n != 0 {
		t.Fatalf("a claim in the full window took %d jobs", n)
	}
	var before int64
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM millrace.reclaim WHERE segment = $1", slot).Scan(&before); err != nil {
		t.Fatal(err)
	}
	// Around the ring until that slot has been reclaimed.
	testkit.WaitFor(t, "the claim's slot to be reclaimed", 30*time.Second, func() bool {
		rotate(t, s, 0)
		var after int64
		err := pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM millrace.reclaim WHERE segment = $1", slot).Scan(&after)
		return err == nil && after > before
	})
	var took int
	if err := pool.QueryRow(ctx, "SELECT coalesce(sum(took), 0) FROM millrace.hold WHERE queue = 'rl'").Scan(&took); err != nil || took != 2 {
		t.Fatalf("after the reclaim the window holds %d jobs claimed (%v); want 2", took, err)
	}
	if n := claim(3); n != 0 {
		t.Fatalf("after a reclaim the window let a claim take %d more jobs; want none (2 per hour)", n)
	}
}

// limitedQueue makes a store with two registered processes, a and b, and
// n jobs in queue, limited to running jobs at once.
func limitedQueue(t *testing.T, queue string, n, running int) (s *Store, pool *pgxpool.Pool, a, b int32) {
	t.Helper()
	ctx := context.Background()
	s, pool = newStore(t)
	var err error
	if a, err = s.Register(ctx, "a", "h", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if b, err = s.Register(ctx, "b", "h", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	for range n {
		enqueue(t, s, pool, queue)
	}
	if err := SetLimit(ctx, pool, queue, Limit{Running: running}); err != nil {
		t.Fatal(err)
	}
	return s, pool, a, b
}

// claimJobs claims queue for owner (holding held) and returns how many jobs
// the claim took and what it saw.
func claimJobs(t *testing.T, s *Store, queue string, owner int32, req int64, held int) (int, Seen) {
	t.Helper()
	bs, seen, err := s.ClaimSeen(context.Background(), queue, owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Held: &held})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range bs {
		n += len(b.Jobs)
	}
	return n, seen
}

// keyClaim claims queue for owner and returns, for each job the claim
// took in order, its key (with a * when it waits for one of the caller's
// slots of the key), and its batches.
func keyClaim(t *testing.T, s *Store, queue string, owner int32, req int64) ([]string, []*Batch) {
	t.Helper()
	bs, _, err := s.ClaimSeen(context.Background(), queue, owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Pace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		for _, j := range b.Jobs {
			k := j.Key
			if j.KeyWaits {
				k += "*"
			}
			if j.KeySlots != 1 {
				t.Fatalf("job %d of key %s: %d slots of its key; want 1", j.ID, j.Key, j.KeySlots)
			}
			got = append(got, k)
		}
	}
	return got, bs
}

// TestPerKeyLimitKeyOfKindAndField: a per-key limit keyed by the job's
// kind and an args field keys each job by both parts, joined by /
// (job_key_parts), and one keyed by the kind alone or a field alone by
// that part (job_key's inlined expression); a missing field keys as
// empty. Each key runs one job at once and buffers the next.
func TestPerKeyLimitKeyOfKindAndField(t *testing.T) {
	ctx := context.Background()
	s, pool, a, _ := limitedQueue(t, "kk", 0, 0)
	add := func(kind, args string) {
		if _, err := s.Enqueue(ctx, pool, NewJob{Queue: "kk", Kind: kind, Args: []byte(args), Priority: 1, MaxAttempts: 3}, false); err != nil {
			t.Fatal(err)
		}
	}
	for req, c := range []struct {
		by   []string
		want string
	}{
		{[]string{"kind", "args.c"}, "[x/1 x/1* y/1 x/2 x/]"},
		{[]string{"kind"}, "[x x* y x* x*]"},
		{[]string{"args.c"}, "[1 1* 1* 2 ]"},
	} {
		add("x", `{"c":1}`)
		add("x", `{"c":1}`)
		add("y", `{"c":1}`)
		add("x", `{"c":2}`)
		add("x", `{}`)
		if err := SetLimit(ctx, pool, "kk", Limit{PerKey: 1, Key: c.by}); err != nil {
			t.Fatal(err)
		}
		if got, _ := keyClaim(t, s, "kk", a, int64(req+1)); fmt.Sprint(got) != c.want {
			t.Fatalf("keyed by %v, the claim took keys %v; want %s", c.by, got, c.want)
		}
		if _, err := pool.Exec(ctx, "DELETE FROM millrace.keyhold WHERE queue = 'kk'"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPerKeyLimitDefersPastTheKeysSlots: under a per-key limit of 1, a
// claim takes, of each key, a job for each slot the live processes leave
// free and, when its process holds a slot of the key, a buffer of up to
// eight per slot that waits in it; the others are deferred to the
// schedule (paced, no history, shown as scheduled). A key's slot comes
// back with the flush of its jobs' outcomes, and a stopping process's
// with its release.
func TestPerKeyLimitDefersPastTheKeysSlots(t *testing.T) {
	ctx := context.Background()
	s, pool, a, b := limitedQueue(t, "pk", 0, 0)
	add := func(c string, n int) (ids []int64) {
		for range n {
			id, err := s.Enqueue(ctx, pool, NewJob{Queue: "pk", Kind: "k", Args: []byte(`{"c":` + c + `}`), Priority: 1, MaxAttempts: 3}, false)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	add("1", 2)
	add("2", 1)
	add("1", 1)
	add("2", 1)
	if err := SetLimit(ctx, pool, "pk", Limit{PerKey: 1, Key: []string{"args.c"}}); err != nil {
		t.Fatal(err)
	}
	got, aBatches := keyClaim(t, s, "pk", a, 1)
	if fmt.Sprint(got) != "[1 1* 2 1* 2*]" {
		t.Fatalf("a's claim took keys %v; want [1 1* 2 1* 2*] (one of each key at once, the others waiting in a)", got)
	}
	// Another process: keys 1 and 2 are a's, key 3 is free; b holds no
	// slot of key 1, so its jobs of key 1 wait in the schedule.
	ones := add("1", 2)
	add("3", 1)
	if got, _ := keyClaim(t, s, "pk", b, 1); fmt.Sprint(got) != "[3]" {
		t.Fatalf("b's claim took keys %v; want [3] (a holds keys 1 and 2)", got)
	}
	for _, id := range ones {
		var st string
		if err := pool.QueryRow(ctx, "SELECT millrace.job_state($1)", id).Scan(&st); err != nil || st != "scheduled" {
			t.Fatalf("deferred job %d is %q (%v); want scheduled", id, st, err)
		}
	}
	// Paced: one per slot every Pace after the key's deferred jobs.
	var spread time.Duration
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(due_at) - min(due_at), '0') FROM millrace.sched
		WHERE queue = 'pk' AND last_error = 'deferred by its key''s limit' AND id = ANY ($1)`, ones).Scan(&n, &spread); err != nil {
		t.Fatal(err)
	}
	if n != 2 || spread < 100*time.Millisecond || spread > 150*time.Millisecond {
		t.Fatalf("key 1's deferred jobs: %d, due over %s; want 2 over 100ms", n, spread)
	}
	ls, err := QueueLimits(ctx, pool)
	if err != nil || len(ls) != 1 || ls[0].KeysRunning != 3 || ls[0].KeysFull != 3 || ls[0].Deferred != 2 {
		t.Fatalf("queue_limits: %+v (%v); want 3 keys running, 3 full, 2 deferred", ls, err)
	}
	// a's jobs of key 1 end: the flush of their outcomes gives its slot
	// back, and b gets key 1.
	var acks []Ack
	for i := range aBatches[0].Jobs {
		if j := &aBatches[0].Jobs[i]; j.Key == "1" {
			acks = append(acks, Ack{Batch: aBatches[0], Job: j, State: AckCompleted, Finished: time.Now()})
		}
	}
	if _, err := s.Flush(ctx, a, 1, false, acks, nil); err != nil {
		t.Fatal(err)
	}
	add("1", 1)
	if got, _ := keyClaim(t, s, "pk", b, 2); fmt.Sprint(got) != "[1]" {
		t.Fatalf("b's claim took keys %v; want [1] (a gave key 1 back, still holds 2)", got)
	}
	top, err := KeyLimits(ctx, pool, "pk", 10)
	if err != nil || fmt.Sprint(top) != "[{1 1 -1} {2 1 -1} {3 1 -1}]" {
		t.Fatalf("key_limits: %v (%v); want keys 1, 2, 3 with a slot each", top, err)
	}
	// The buffer is eight per slot: of eleven jobs of a key, a claim of
	// ten takes one to run, eight to wait, and defers the tenth.
	add("7", 11)
	if got, _ := keyClaim(t, s, "pk", a, 2); fmt.Sprint(got) != "[7 7* 7* 7* 7* 7* 7* 7* 7*]" {
		t.Fatalf("a's claim of key 7 took %v; want one to run and eight to wait", got)
	}
	// The ring turns (every slot reclaimed): a's totals and slots of key
	// 7 are carried, so b still finds the key full, and a's next claim
	// of it keeps its one slot.
	for range 8 {
		rotate(t, s, 0)
	}
	var slots *int
	if err := pool.QueryRow(ctx, `SELECT slots FROM millrace.key_held('pk', '7', $1)`, a).Scan(&slots); err != nil || slots == nil || *slots != 1 {
		t.Fatalf("a's slots of key 7 after the ring turned: %v (%v); want 1", slots, err)
	}
	add("7", 1)
	if got, _ := keyClaim(t, s, "pk", b, 3); len(got) != 0 {
		t.Fatalf("b's claim after the ring turned took %v; want nothing (a holds key 7)", got)
	}
	// A process that stops holds nothing.
	if _, err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	top, err = KeyLimits(ctx, pool, "pk", 10)
	if err != nil || fmt.Sprint(top) != "[{1 1 -1} {3 1 -1}]" {
		t.Fatalf("key_limits after a's release: %v (%v); want keys 1 and 3", top, err)
	}
	// A process that dies (its lease runs out, as when it is killed)
	// holds nothing: b takes the key it held.
	c, err := s.Register(ctx, "c", "h", 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	add("9", 1)
	for req := int64(1); ; req++ { // a's released batches are adopted first
		got, _ := keyClaim(t, s, "pk", c, req)
		if slices.Contains(got, "9") {
			break
		}
		if req == 5 {
			t.Fatalf("c's claims took no job of key 9 (last: %v)", got)
		}
	}
	add("9", 1)
	if got, _ := keyClaim(t, s, "pk", b, 4); len(got) != 0 {
		t.Fatalf("b's claim took %v while c holds key 9; want nothing", got)
	}
	testkit.WaitFor(t, "c's lease to run out", 10*time.Second, func() bool {
		top, err := KeyLimits(ctx, pool, "pk", 10)
		return err == nil && fmt.Sprint(top) == "[{1 1 -1} {3 1 -1}]"
	})
	add("9", 1)
	if got, _ := keyClaim(t, s, "pk", b, 5); fmt.Sprint(got) != "[9]" {
		t.Fatalf("b's claim after c died took %v; want key 9", got)
	}
}

// rateClaim claims queue for owner and returns the args field c of each
// job the claim took, in order.
func rateClaim(t *testing.T, s *Store, queue string, owner int32, req int64) []string {
	t.Helper()
	bs, _, err := s.ClaimSeen(context.Background(), queue, owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		for _, j := range b.Jobs {
			var a struct{ C json.Number }
			if err := json.Unmarshal(j.Args, &a); err != nil {
				t.Fatal(err)
			}
			if j.Key != "" || j.KeyWaits {
				t.Fatalf("job %d under a per-key rate alone came with key %q (waits %v); want none", j.ID, j.Key, j.KeyWaits)
			}
			got = append(got, a.C.String())
		}
	}
	return got
}

// TestPerKeyRateDefersPastTheWindow: under a per-key rate, a claim takes
// each key's jobs up to the rate less what the claims of the key's window
// took, across processes, and defers the rest to the schedule, a rate's
// worth every window after the key's deferred jobs, while other keys'
// jobs go out; the window's claims survive the ring; and on the server's
// clock no window holds more of a key's claims than the rate.
func TestPerKeyRateDefersPastTheWindow(t *testing.T) {
	ctx := context.Background()
	s, pool, a, b := limitedQueue(t, "kr", 0, 0)
	add := func(c string, n int) (ids []int64) {
		for range n {
			id, err := s.Enqueue(ctx, pool, NewJob{Queue: "kr", Kind: "k", Args: []byte(`{"c":` + c + `}`), Priority: 1, MaxAttempts: 3}, false)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	add("1", 3)
	later := add("1", 4)
	add("2", 1)
	if err := SetLimit(ctx, pool, "kr", Limit{KeyRate: 3, KeyPer: time.Hour, Key: []string{"args.c"}}); err != nil {
		t.Fatal(err)
	}
	if got := rateClaim(t, s, "kr", a, 1); fmt.Sprint(got) != "[1 1 1 2]" {
		t.Fatalf("a's claim took %v; want [1 1 1 2] (three of key 1, the rest of it deferred)", got)
	}
	// Deferred from when the window's claims leave it (an hour and a
	// second on), one every window / rate: the rate, spread.
	var due []time.Duration
	rows, err := pool.Query(ctx, `SELECT due_at - now() FROM millrace.sched
		WHERE queue = 'kr' AND last_error = 'deferred by its key''s limit' AND id = ANY ($1) ORDER BY due_at`, later)
	if err != nil {
		t.Fatal(err)
	}
	if due, err = pgx.CollectRows(rows, pgx.RowTo[time.Duration]); err != nil {
		t.Fatal(err)
	}
	window := time.Hour + time.Second
	near := func(d, want time.Duration) bool { return d > want-time.Minute && d < want+time.Minute }
	if len(due) != 4 || !near(due[0], window) || !near(due[1]-due[0], window/3) || !near(due[3]-due[0], window) {
		t.Fatalf("key 1's deferred jobs are due in %v; want from %v on, one every %v", due, window, window/3)
	}
	for _, id := range later {
		var st string
		if err := pool.QueryRow(ctx, "SELECT millrace.job_state($1)", id).Scan(&st); err != nil || st != "scheduled" {
			t.Fatalf("deferred job %d is %q (%v); want scheduled", id, st, err)
		}
	}
	// Another process: key 1's window is full, key 2 has two starts left.
	more := add("1", 1)
	add("2", 3)
	if got := rateClaim(t, s, "kr", b, 1); fmt.Sprint(got) != "[2 2]" {
		t.Fatalf("b's claim took %v; want [2 2] (key 1's window is full, key 2 has two left)", got)
	}
	var after time.Duration
	if err := pool.QueryRow(ctx, "SELECT due_at - now() FROM millrace.sched WHERE id = $1", more[0]).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !near(after, window+4*window/3) {
		t.Fatalf("key 1's job deferred by b is due in %v; want after the key's deferred jobs (%v)", after, window+4*window/3)
	}
	ls, err := QueueLimits(ctx, pool)
	if err != nil || len(ls) != 1 || ls[0].KeyRate != 3 || ls[0].KeyPer != time.Hour || ls[0].Deferred != 6 || ls[0].PerKey != 0 {
		t.Fatalf("queue_limits: %+v (%v); want a per-key rate of 3 an hour and 6 deferred", ls, err)
	}
	top, err := KeyLimits(ctx, pool, "kr", 10)
	if err != nil || fmt.Sprint(top) != "[{1 0 3} {2 0 3}]" {
		t.Fatalf("key_limits: %v (%v); want keys 1 and 2 with 3 started each", top, err)
	}
	// The ring turns (every slot reclaimed): the window's rows are
	// carried, so the keys stay full.
	for range 8 {
		rotate(t, s, 0)
	}
	add("2", 1)
	if got := rateClaim(t, s, "kr", a, 2); len(got) != 0 {
		t.Fatalf("a's claim after the ring turned took %v; want nothing (both keys' windows are full)", got)
	}
	if top, err := KeyLimits(ctx, pool, "kr", 10); err != nil || fmt.Sprint(top) != "[{1 0 3} {2 0 3}]" {
		t.Fatalf("key_limits after the ring turned: %v (%v); want keys 1 and 2 with 3 started each", top, err)
	}

	// A short period: every job of a key comes through, at the rate on
	// the server's clock.
	if err := SetLimit(ctx, pool, "kr2", Limit{KeyRate: 2, KeyPer: 100 * time.Millisecond, Key: []string{"args.c"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if _, err := s.Enqueue(ctx, pool, NewJob{Queue: "kr2", Kind: "k", Args: []byte(`{"c":` + fmt.Sprint(i%3) + `}`), Priority: 1, MaxAttempts: 3}, false); err != nil {
			t.Fatal(err)
		}
	}
	got, req := 0, int64(0)
	testkit.WaitFor(t, "every job of kr2 to be claimed", 30*time.Second, func() bool {
		if _, err := s.Promote(ctx, 0, 1000); err != nil {
			t.Fatal(err)
		}
		req++
		got += len(rateClaim(t, s, "kr2", a, req))
		return got == 9
	})
	var worst int
	if err := pool.QueryRow(ctx, `SELECT max(w) FROM (SELECT (SELECT sum(y.took) FROM millrace.keyrate y
		WHERE y.queue = 'kr2' AND y.key = x.key AND y.at >= x.at AND y.at < x.at + millrace.rate_window('100 ms')) AS w
		FROM millrace.keyrate x WHERE x.queue = 'kr2' AND x.took > 0) z`).Scan(&worst); err != nil {
		t.Fatal(err)
	}
	if worst != 2 {
		t.Fatalf("the most jobs of a key claimed in a window of 110ms was %d; want 2", worst)
	}
}

// TestKeyMapWritersTakeTurns: a process's map of the keys it holds is
// written by its claims and by its flushes, on different connections;
// each new map adds to the newest one, so two writers must not both read
// the same map. Two sessions add one job of a key each, 100 times at
// once: the map ends at 200, none lost.
func TestKeyMapWritersTakeTurns(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	const each = 100
	errs := make(chan error, 2)
	for w := range 2 {
		go func() {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			for i := range each {
				// A transaction of its own each, as a claim's or a flush's
				// (READ COMMITTED): the map read follows the lock. Every
				// other call gives one key (keyhold_put's path for one).
				q := `SELECT millrace.keyhold_put('km', 7, ARRAY['k', $1::text], ARRAY[1, 1], NULL, NULL)`
				if i%2 == 0 {
					q = `SELECT millrace.keyhold_put('km', 7, ARRAY['k'], ARRAY[1 + 0 * length($1::text)], NULL, NULL)`
				}
				if err := RunTx(ctx, conn.Conn(), TxOpts{}, nil, q, fmt.Sprintf("w%d-%d", w, i%3)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := pool.QueryRow(ctx, `SELECT n FROM millrace.key_held('km', 'k', 7)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2*each {
		t.Fatalf("the map holds %d jobs of the key after %d additions by two writers: writers read the same map", n, 2*each)
	}
}

// TestHoldRowOnlyWhenSlotsChange: under a running limit a process's row
// in millrace.hold is its count of slots, so a claim that leaves the count
// as it was (it took as many jobs as ended since its last one) writes
// none; under a rate limit every claim that took jobs writes one (the
// rate's running total).
func TestHoldRowOnlyWhenSlotsChange(t *testing.T) {
	ctx := context.Background()
	s, pool, a, _ := limitedQueue(t, "slots", 0, 5)
	rows := func(queue string) (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.hold WHERE queue = $1 AND owner = $2", queue, a).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	req := int64(0)
	round := func(queue string, jobs, held int) {
		t.Helper()
		for range jobs {
			enqueue(t, s, pool, queue)
		}
		req++
		if n, _ := claimJobs(t, s, queue, a, req, held); n != jobs {
			t.Fatalf("claim %d of %s took %d jobs; want %d", req, queue, n, jobs)
		}
	}
	round("slots", 2, 0)
	if n := rows("slots"); n != 1 {
		t.Fatalf("after the first claim: %d hold rows; want 1", n)
	}
	round("slots", 2, 0) // the two before ended: still two slots
	if n := rows("slots"); n != 1 {
		t.Fatalf("a claim that kept the count wrote a row: %d hold rows; want 1", n)
	}
	round("slots", 1, 0)
	if n := rows("slots"); n != 2 {
		t.Fatalf("a claim that changed the count: %d hold rows; want 2", n)
	}
	if err := SetLimit(ctx, pool, "rated", Limit{Rate: 1000, Per: time.Second}); err != nil {
		t.Fatal(err)
	}
	round("rated", 2, 0)
	round("rated", 2, 0)
	if n := rows("rated"); n != 2 {
		t.Fatalf("under a rate limit: %d hold rows after two claims that took jobs; want 2", n)
	}
}
