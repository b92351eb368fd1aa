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

// TestRotationLeavesLargeBacklogInPlace (issue 20.4): a backlog of large
// jobs in a queue nobody works, far under the carry limit in jobs but over
// it in bytes, stays in its slot while the ring turns on the others and a
// served queue keeps working; it is never copied (its slot is never
// reclaimed, and the WAL of three turns of the ring is a fraction of the
// backlog's size), the rotation says why and names the queue, and every
// job of the backlog is claimed once afterwards.
func TestRotationLeavesLargeBacklogInPlace(t *testing.T) {
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
	var ledger int64
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text, coalesce((SELECT max(id) FROM millrace.reclaim), 0)").
		Scan(&lsn, &ledger); err != nil {
		t.Fatal(err)
	}
	before, err := Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var blocked []string
	for i := 0; i < rounds; i++ {
		// A served queue keeps producing and working.
		for k := 0; k < 3; k++ {
			enqueue(t, s, pool, "served")
		}
		b, err := s.claimBatch(ctx, "served", 1, int64(i+1), false, noLimit)
		if err != nil || b == nil {
			t.Fatalf("claim of the served queue: %v, %v", b, err)
		}
		acks := make([]Ack, len(b.Jobs))
		for k := range b.Jobs {
			acks[k] = Ack{Batch: b, Job: &b.Jobs[k], State: AckCompleted}
		}
		if _, err := s.Flush(ctx, 1, int64(i+1), false, acks, []*Batch{b}); err != nil {
			t.Fatal(err)
		}
		for _, a := range rotateBounded(t, s, bound) {
			if a.Segment != slot {
				continue
			}
			switch a.Action {
			case "reclaimed":
				t.Fatalf("round %d: the backlog's slot %d was reclaimed (its %d bytes copied): %s", i, slot, stored, a.Detail)
			case "blocked":
				blocked = append(blocked, a.Detail)
			}
		}
	}
	var wal int64
	if err := pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&wal); err != nil {
		t.Fatal(err)
	}
	t.Logf("WAL over %d rounds: %d bytes (backlog: %d bytes stored in slot %d)", rounds, wal, stored, slot)
	after, err := Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.Rotations - before.Rotations; n < rounds-1 {
		t.Fatalf("%d rotations in %d rounds: the ring must keep turning on the other slots", n, rounds)
	}
	var reclaimed int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.reclaim WHERE segment = $1 AND id > $2", slot, ledger).Scan(&reclaimed); err != nil {
		t.Fatal(err)
	}
	if reclaimed != 0 {
		t.Fatalf("the ledger shows slot %d reclaimed %d times with its backlog", slot, reclaimed)
	}
	if len(blocked) < rounds-1 {
		t.Fatalf("the backlog's slot reported blocked in %d of %d rounds: %q", len(blocked), rounds, blocked)
	}
	for _, want := range []string{fmt.Sprintf("slot %d ", slot), "unserved", "bytes"} {
		if !strings.Contains(blocked[0], want) {
			t.Fatalf("the blocked row does not say %q: %s", want, blocked[0])
		}
	}
	if wal > stored/4 {
		t.Fatalf("%d bytes of WAL over %d rounds for a %d-byte backlog left in place: it was copied", wal, rounds, stored)
	}
	got := claimAll(t, s, "unserved", 2, noLimit)
	for id := range backlog {
		if got[id] != 1 {
			t.Errorf("job %d of the backlog claimed %d times", id, got[id])
		}
	}
	if len(got) != jobs {
		t.Fatalf("%d jobs claimed from the unserved queue; want %d", len(got), jobs)
	}
}

// TestRotationWaitsRatherThanCopyLargeBacklogs: when every slot but the
// current one holds a backlog over the byte bound, none is copied to make
// room (the job-count rule would carry it): the ring waits and says why,
// and once the backlogs are claimed it turns again, nothing lost.
func TestRotationWaitsRatherThanCopyLargeBacklogs(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	const bound = 100 << 10
	rnd := rand.New(rand.NewSource(21))
	backlog := map[int64]bool{}
	big := func() {
		for _, id := range enqueueBig(t, s, rnd, "unserved", 2, 200<<10) {
			backlog[id] = true
		}
	}
	// A backlog in each of three slots, made current in turn.
	for i := 0; i < 3; i++ {
		big()
		var rotated bool
		for _, a := range rotateBounded(t, s, bound) {
			rotated = rotated || a.Action == "rotated"
		}
		if !rotated {
			t.Fatalf("round %d: the ring did not turn while a slot was clean", i)
		}
	}
	var ledger int64
	pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM millrace.reclaim").Scan(&ledger)
	for i := 0; i < 4; i++ {
		var blocked, waiting int
		for _, a := range rotateBounded(t, s, bound) {
			switch a.Action {
			case "reclaimed", "rotated":
				t.Fatalf("round %d with no clean slot: %s (%s); want every backlog left in place", i, a.Action, a.Detail)
			case "blocked":
				blocked++
				if !strings.Contains(a.Detail, "'unserved'") || !strings.Contains(a.Detail, "no slot is free") {
					t.Fatalf("the blocked row does not name the queue and say the ring waits: %s", a.Detail)
				}
			case "waiting":
				waiting++
			}
		}
		if blocked != 3 || waiting != 1 {
			t.Fatalf("round %d: %d slots blocked, %d waiting rows; want 3 and 1", i, blocked, waiting)
		}
	}
	var reclaimed int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.reclaim WHERE id > $1", ledger).Scan(&reclaimed)
	if reclaimed != 0 {
		t.Fatalf("%d reclaims while every backlog was over the bound", reclaimed)
	}
	// Claimed and finished, the backlogs free their slots.
	for req := int64(1); ; req++ {
		b, err := s.claimBatch(ctx, "unserved", 1, req, false, noLimit)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		acks := make([]Ack, len(b.Jobs))
		for k := range b.Jobs {
			if !backlog[b.Jobs[k].ID] {
				t.Fatalf("job %d claimed twice or unknown", b.Jobs[k].ID)
			}
			delete(backlog, b.Jobs[k].ID)
			acks[k] = Ack{Batch: b, Job: &b.Jobs[k], State: AckCompleted}
		}
		if _, err := s.Flush(ctx, 1, req, false, acks, []*Batch{b}); err != nil {
			t.Fatal(err)
		}
	}
	if len(backlog) != 0 {
		t.Fatalf("%d jobs of the backlogs never claimed", len(backlog))
	}
	var rotated bool
	for _, a := range rotateBounded(t, s, bound) {
		rotated = rotated || a.Action == "rotated"
	}
	if !rotated {
		t.Fatal("the ring did not turn once the backlogs were claimed")
	}
}
