package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// rotateBounded runs one rotation round whose reclaims carry at most
// maxBytes of jobs not yet claimed.
func rotateBounded(t *testing.T, s *Store, maxBytes int64) []RingAction {
	t.Helper()
	a, err := s.Rotate(context.Background(), 0, 0, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// enqueueBig enqueues n jobs of about size bytes of random text (which
// TOAST cannot compress) into queue and returns their ids.
func enqueueBig(t *testing.T, s *Store, rnd *rand.Rand, queue string, n, size int) []int64 {
	t.Helper()
	raw := make([]byte, size*3/4)
	var ids []int64
	for i := 0; i < n; i++ {
		rnd.Read(raw)
		args, err := json.Marshal(map[string]string{"pad": base64.StdEncoding.EncodeToString(raw)})
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.Enqueue(context.Background(), s.Pool, NewJob{Queue: queue, Kind: "k", Args: args, Priority: 1, MaxAttempts: 3}, false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// finishAll claims every job of queue and completes it, and returns how
// many times each was claimed.
func finishAll(t *testing.T, s *Store, queue string, owner int32, seq int64) map[int64]int {
	t.Helper()
	got := map[int64]int{}
	for req := int64(1); ; req++ {
		b, err := s.claimBatch(context.Background(), queue, owner, seq+req, false, noLimit)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return got
		}
		acks := make([]Ack, len(b.Jobs))
		for k := range b.Jobs {
			got[b.Jobs[k].ID]++
			acks[k] = Ack{Batch: b, Job: &b.Jobs[k], State: AckCompleted}
		}
		if _, err := s.Flush(context.Background(), owner, seq+req, false, acks, []*Batch{b}); err != nil {
			t.Fatal(err)
		}
	}
}

// walSince is the WAL written since lsn, in bytes.
func walSince(t *testing.T, s *Store, lsn string) int64 {
	t.Helper()
	var wal int64
	if err := s.Pool.QueryRow(context.Background(), "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&wal); err != nil {
		t.Fatal(err)
	}
	return wal
}

// TestRotationParksALargeBacklogOnce (issues 20.4, 31.7): a backlog of
// large jobs in a queue nobody works, under the carry limit in jobs but
// over it in bytes, is moved once into the park when its slot is
// reclaimed, and never copied again while the ring turns and a served
// queue keeps working (the WAL of three turns of the ring is about one
// copy of the backlog; copied at every reclaim it was 2 GB in 40 s). The
// rotation says so and names the queue; every job of the backlog is
// claimed once afterwards, and the park is emptied once they are done.
func TestRotationParksALargeBacklogOnce(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	const (
		jobs   = 40
		size   = 200 << 10 // bytes of arguments per job
		bound  = 1 << 20   // the byte bound of one reclaim's carry
		rounds = 12        // three turns of the four-slot ring
	)
	backlog := map[int64]bool{}
	for _, id := range enqueueBig(t, s, rand.New(rand.NewSource(20)), "unserved", jobs, size) {
		backlog[id] = true
	}
	var slot int16
	var stored int64
	if err := pool.QueryRow(ctx, "SELECT min(slot), sum(pg_column_size(args)) FROM millrace.job WHERE queue = 'unserved'").
		Scan(&slot, &stored); err != nil {
		t.Fatal(err)
	}
	if stored < jobs*size*9/10 {
		t.Fatalf("the backlog is stored in %d bytes: compressed, it tests nothing", stored)
	}
	var lsn string
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	before, err := Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var parked []string
	for i := 0; i < rounds; i++ {
		// A served queue keeps producing and working.
		for k := 0; k < 3; k++ {
			enqueue(t, s, pool, "served")
		}
		finishAll(t, s, "served", 1, int64(i*100))
		for _, a := range rotateBounded(t, s, bound) {
			switch {
			case a.Action == "blocked" || a.Action == "waiting":
				t.Fatalf("round %d: %s: %s", i, a.Action, a.Detail)
			case a.Action == "reclaimed" && strings.Contains(a.Detail, "into the park"):
				parked = append(parked, a.Detail)
			case a.Action == "reclaimed" && a.Segment == 4:
				t.Fatalf("round %d: the park was emptied with its backlog unclaimed: %s", i, a.Detail)
			}
		}
	}
	wal := walSince(t, s, lsn)
	t.Logf("WAL over %d rounds: %d bytes (backlog: %d bytes stored, in slot %d)", rounds, wal, stored, slot)
	after, err := Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.Rotations - before.Rotations; n < rounds-1 {
		t.Fatalf("%d rotations in %d rounds: the ring must keep turning", n, rounds)
	}
	if n := after.Reclaims - before.Reclaims; n < rounds-2 {
		t.Fatalf("%d reclaims in %d rounds: every slot must be reclaimed in its turn", n, rounds)
	}
	if len(parked) != 1 {
		t.Fatalf("the backlog was parked %d times; want once: %q", len(parked), parked)
	}
	for _, want := range []string{fmt.Sprintf("slot %d ", slot), "unserved"} {
		if !strings.Contains(parked[0], want) {
			t.Fatalf("the reclaimed row does not say %q: %s", want, parked[0])
		}
	}
	if wal > stored*3/2 {
		t.Fatalf("%d bytes of WAL over %d rounds for a %d-byte backlog: it was copied more than once", wal, rounds, stored)
	}
	var inPark int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE slot = 4 AND queue = 'unserved'").Scan(&inPark); err != nil || inPark != jobs {
		t.Fatalf("%d jobs of the backlog in the park (%v); want %d", inPark, err, jobs)
	}
	got := finishAll(t, s, "unserved", 2, 0)
	for id := range backlog {
		if got[id] != 1 {
			t.Errorf("job %d of the backlog claimed %d times", id, got[id])
		}
	}
	if len(got) != jobs {
		t.Fatalf("%d jobs claimed from the unserved queue; want %d", len(got), jobs)
	}
	// Claimed and done, the park is emptied at the next reclaim.
	var emptied bool
	for i := 0; i < 4 && !emptied; i++ {
		for _, a := range rotateBounded(t, s, bound) {
			emptied = emptied || (a.Action == "reclaimed" && a.Segment == 4)
		}
	}
	var size4 int64
	pool.QueryRow(ctx, "SELECT pg_relation_size('millrace.job_4')").Scan(&size4)
	if !emptied || size4 != 0 {
		t.Fatalf("the park was not emptied once its backlog was done (emptied %v, %d bytes)", emptied, size4)
	}
}

// TestUnservedQueueInEverySlotNeverStopsTheRing (issue 31.7): a queue
// nobody works receives a backlog over the carry bound in every slot.
// Each slot was left in place, the ring waited and the current slot took
// every arrival; now each slot is reclaimed in its turn, its backlog
// parked once, and storage in the ring stays what the served traffic
// needs. Claimed at last, every job runs once.
func TestUnservedQueueInEverySlotNeverStopsTheRing(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	const bound = 100 << 10
	rnd := rand.New(rand.NewSource(21))
	backlog := map[int64]bool{}
	var lsn string
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	const rounds = 10
	var ringMax int64
	for i := 0; i < rounds; i++ {
		for _, id := range enqueueBig(t, s, rnd, "unserved", 2, 200<<10) {
			backlog[id] = true
		}
		var rotated bool
		for _, a := range rotateBounded(t, s, bound) {
			switch a.Action {
			case "rotated":
				rotated = true
			case "blocked", "waiting":
				t.Fatalf("round %d: %s: %s", i, a.Action, a.Detail)
			}
		}
		if !rotated {
			t.Fatalf("round %d: the ring did not turn", i)
		}
		var ring int64
		if err := pool.QueryRow(ctx, "SELECT sum(pg_table_size(format('millrace.job_%s', g)::regclass))::bigint FROM generate_series(0, 3) g").
			Scan(&ring); err != nil {
			t.Fatal(err)
		}
		ringMax = max(ringMax, ring)
	}
	var stored int64
	pool.QueryRow(ctx, "SELECT sum(pg_column_size(args)) FROM millrace.job WHERE queue = 'unserved'").Scan(&stored)
	wal := walSince(t, s, lsn)
	t.Logf("%d rounds: ring's job tables at most %d bytes, backlog %d bytes stored, WAL %d bytes", rounds, ringMax, stored, wal)
	// Two rounds' arrivals at most (the current slot's and the one not yet
	// reclaimed), each 400 KB, plus the tables' own pages.
	if ringMax > 4*(400<<10)+(1<<20) {
		t.Errorf("the ring's job tables reached %d bytes: the backlog is not held in the park", ringMax)
	}
	// Each job is enqueued once and parked once (at most once more: the
	// arrivals in slot reclaimed while under the bound are carried).
	if wal > 4*stored {
		t.Errorf("%d bytes of WAL for %d bytes of backlog: copied again and again", wal, stored)
	}
	got := finishAll(t, s, "unserved", 1, 0)
	for id := range backlog {
		if got[id] != 1 {
			t.Errorf("job %d claimed %d times", id, got[id])
		}
	}
	if len(got) != len(backlog) {
		t.Fatalf("%d jobs claimed; want %d", len(got), len(backlog))
	}
}
