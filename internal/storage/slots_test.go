package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// slotsHeld returns, per slot, the partitions of the ring (millrace.slot_tables)
// on which backend pid holds a lock: what keeps that slot from being
// reclaimed while pid's transaction is open.
func slotsHeld(t *testing.T, pool *pgxpool.Pool, pid int) map[int][]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT DISTINCT s.slot, c.relname || ' (' || l.mode || ')' FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation
		JOIN (SELECT g AS slot, x::regclass::oid AS rel FROM generate_series(0, millrace.slots() - 1) g,
		      unnest(millrace.slot_tables(g)) x) s ON s.rel = l.relation
		WHERE l.locktype = 'relation' AND l.pid = $1
		ORDER BY 1, 2`, pid)
	if err != nil {
		t.Fatal(err)
	}
	held := map[int][]string{}
	for rows.Next() {
		var slot int
		var rel string
		if err := rows.Scan(&slot, &rel); err != nil {
			t.Fatal(err)
		}
		held[slot] = append(held[slot], rel)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return held
}

func describeHeld(held map[int][]string) string {
	var slots []int
	for s := range held {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	var b strings.Builder
	for _, s := range slots {
		fmt.Fprintf(&b, "slot %d: %s; ", s, strings.Join(held[s], ", "))
	}
	return b.String()
}

// turnRing rotates and reclaims until slot want is current and every other
// slot has been current once and holds rows (so that no statement is
// spared opening a partition because it never existed in a plan).
func turnRing(t *testing.T, s *Store, pool *pgxpool.Pool, want int16) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		st, err := Ring(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 4 && st.Current == want {
			return
		}
		enqueue(t, s, pool, "filler")
		rotate(t, s, 0)
	}
	t.Fatalf("slot %d never became current", want)
}

// TestWritePathsHoldOneSlot: a transaction that enqueues, enqueues a
// unique job, or completes a claimed job (CompleteTx) and stays open must
// keep at most one slot of the ring from being reclaimed (DESIGN.md P15:
// no write path holds more than the slot it writes; issue 20.3). Each path
// runs in its own transaction, left open while the test lists the slot
// partitions its backend holds locks on.
func TestWritePathsHoldOneSlot(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	turnRing(t, s, pool, 2)
	// A unique key of an older job, so that the unique insert finds a key
	// row (in another slot) and decides on it.
	if _, err := Insert(ctx, pool, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "old"}}, false); err != nil {
		t.Fatal(err)
	}
	rotate(t, s, 0)
	enqueue(t, s, pool, "done")
	batch, err := s.claimBatch(ctx, "done", 7, 1, false, noLimit)
	if err != nil || batch == nil {
		t.Fatalf("claim: %v %v", batch, err)
	}
	rotate(t, s, 0) // the batch's tick and the ack go to different slots

	paths := []struct {
		name string
		run  func(tx pgx.Tx) error
	}{
		{"plain enqueue", func(tx pgx.Tx) error {
			_, err := s.Enqueue(ctx, tx, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false)
			return err
		}},
		{"unique enqueue, new key", func(tx pgx.Tx) error {
			_, err := InsertTx(ctx, tx, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "k1"}}, false)
			return err
		}},
		{"unique enqueue, duplicate key", func(tx pgx.Tx) error {
			r, err := InsertTx(ctx, tx, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "old"}}, false)
			if err == nil && !r[0].Duplicate {
				err = fmt.Errorf("the key's job is unfinished: want a duplicate, got %+v", r[0])
			}
			return err
		}},
		{"SQL unique enqueue", func(tx pgx.Tx) error { // issue 20.3's reproduction
			_, err := tx.Exec(ctx, "SELECT millrace.enqueue('k', '{}', 'u', p_unique_key => 'k2')")
			return err
		}},
		{"CompleteTx", func(tx pgx.Tx) error {
			return Complete(ctx, tx, 7, batch, &batch.Jobs[0], time.Now())
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var pid int
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if err := p.run(tx); err != nil {
				t.Fatal(err)
			}
			held := slotsHeld(t, pool, pid)
			t.Logf("%s holds %s", p.name, describeHeld(held))
			if len(held) > 1 {
				t.Errorf("an open transaction that did a %s holds %d slots of the ring (want at most 1): %s",
					p.name, len(held), describeHeld(held))
			}
		})
	}
}

// BenchmarkWritePaths times the write paths TestWritePathsHoldOneSlot
// checks, each in its own READ COMMITTED transaction committed at once: a
// unique insert of a new key, a unique insert of a key whose job is
// unfinished (a duplicate), and a CompleteTx of a claimed job.
func BenchmarkWritePaths(b *testing.B) {
	ctx := context.Background()
	inTx := func(b *testing.B, pool *pgxpool.Pool, f func(tx pgx.Tx) error) {
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			b.Fatal(err)
		}
		if err := f(tx); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("unique-new", func(b *testing.B) {
		_, pool := newStoreB(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			inTx(b, pool, func(tx pgx.Tx) error {
				_, err := InsertTx(ctx, tx, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: fmt.Sprint("k", i)}}, false)
				return err
			})
		}
	})
	b.Run("unique-duplicate", func(b *testing.B) {
		_, pool := newStoreB(b)
		dup := []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "dup"}}
		if _, err := Insert(ctx, pool, dup, false); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			inTx(b, pool, func(tx pgx.Tx) error {
				_, err := InsertTx(ctx, tx, dup, false)
				return err
			})
		}
	})
	b.Run("complete-tx", func(b *testing.B) {
		s, pool := newStoreB(b)
		jobs := make([]NewJob, b.N)
		for i := range jobs {
			jobs[i] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}
		}
		if _, err := Insert(ctx, pool, jobs, false); err != nil {
			b.Fatal(err)
		}
		batches, err := s.Claim(ctx, "q", 1, 1, false, Limits{MaxJobs: b.N, MaxBytes: 1 << 40})
		if err != nil || len(batches) != 1 || len(batches[0].Jobs) != b.N {
			b.Fatalf("claim: %v", err)
		}
		bt := batches[0]
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			inTx(b, pool, func(tx pgx.Tx) error { return Complete(ctx, tx, 1, bt, &bt.Jobs[i], time.Now()) })
		}
	})
}

// reclaimsWhile rotates and reclaims the ring (no grace) rounds times and
// returns the slots it reclaimed.
func reclaimsWhile(t *testing.T, s *Store, rounds int) map[int16]int {
	t.Helper()
	got := map[int16]int{}
	for i := 0; i < rounds; i++ {
		for _, a := range rotate(t, s, 0) {
			if a.Action == "reclaimed" {
				got[a.Segment]++
			}
		}
	}
	return got
}

// TestUniqueInsertAcrossReclaims: a transaction that inserted a unique job
// stays open while the ring turns; it holds only the slot it wrote, so the
// other slots are reclaimed meanwhile, among them the slot of an older
// unfinished job's key, which is carried forward. The key it inserted
// stays locked: a second insert of it waits, and once the first commits
// it is a duplicate. The older key still blocks. Every job runs once.
func TestUniqueInsertAcrossReclaims(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	uniq := func(q Querier, key string) Inserted {
		t.Helper()
		r, err := insertOn(ctx, q, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: key}}, false)
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	old := uniq(pool, "old")
	rotate(t, s, 0) // "old" is in a slot no longer current
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	first := uniq(tx, "new")
	if first.Duplicate {
		t.Fatalf("first insert of a new key: %+v", first)
	}
	var oldSlot, txSlot int16
	if err := pool.QueryRow(ctx, "SELECT slot FROM millrace.uniq WHERE key = 'old'").Scan(&oldSlot); err != nil {
		t.Fatal(err)
	}
	// The slot the transaction wrote into, read without opening a table
	// (a read would hold every slot).
	if err := tx.QueryRow(ctx, "SELECT current_setting('millrace.txn_slot')::smallint").Scan(&txSlot); err != nil {
		t.Fatal(err)
	}
	reclaimed := reclaimsWhile(t, s, 8)
	if reclaimed[oldSlot] == 0 || reclaimed[txSlot] != 0 {
		t.Fatalf("reclaims with the unique insert open: %v; want slot %d (the old key's) reclaimed, slot %d (the open insert's) not", reclaimed, oldSlot, txSlot)
	}
	if again := uniq(pool, "old"); !again.Duplicate || again.ID != old.ID {
		t.Fatalf("the old key after its slot was reclaimed: %+v; want a duplicate of job %d", again, old.ID)
	}
	second := make(chan Inserted, 1)
	go func() {
		r, err := Insert(ctx, pool, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "new"}}, false)
		if err != nil {
			t.Error(err)
		}
		second <- r[0]
	}()
	waitBlocked(t, pool)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-second; !r.Duplicate || r.ID != first.ID {
		t.Fatalf("second insert of the key, after the first committed: %+v; want a duplicate of job %d", r, first.ID)
	}
	reclaimsWhile(t, s, 8)
	got := claimAll(t, s, "u", 1, noLimit)
	if len(got) != 2 || got[old.ID] != 1 || got[first.ID] != 1 {
		t.Fatalf("claimed %v; want jobs %d and %d once each", got, old.ID, first.ID)
	}
}

// TestCompleteTxAcrossReclaims: a CompleteTx left open holds only the slot
// its ack goes to; the ring turns meanwhile and carries the open batch
// forward. Committed, the job is completed once: the worker's acker's ack
// of it (IfAbsent) is skipped, the batch closes unfenced, and nothing runs
// again. Rolled back, the job runs again, once, after its batch is
// released. A release that starts while a CompleteTx is open waits for it
// (the fence), and then the completed job is not run again.
func TestCompleteTxAcrossReclaims(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	claim := func(owner int32) (*Batch, int64) {
		t.Helper()
		id := enqueue(t, s, pool, "q")
		b, err := s.claimBatch(ctx, "q", owner, 1, false, noLimit)
		if err != nil || b == nil || len(b.Jobs) != 1 {
			t.Fatalf("claim: %v %+v", err, b)
		}
		return b, id
	}
	open := func(b *Batch, owner int32) (pgx.Tx, int16) {
		t.Helper()
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		if err := Complete(ctx, tx, owner, b, &b.Jobs[0], time.Now()); err != nil {
			t.Fatal(err)
		}
		var slot int16
		// The slot its ack went to, read without opening a table.
		if err := tx.QueryRow(ctx, "SELECT current_setting('millrace.txn_slot')::smallint").Scan(&slot); err != nil {
			t.Fatal(err)
		}
		return tx, slot
	}
	tickSlot := func(b *Batch) int16 {
		var slot int16
		if err := pool.QueryRow(ctx, "SELECT slot FROM millrace.tick WHERE tick_id = $1 AND NOT carried", b.TickID).Scan(&slot); err != nil {
			t.Fatal(err)
		}
		return slot
	}

	t.Run("committed", func(t *testing.T) {
		b, id := claim(1)
		rotate(t, s, 0) // the batch's tick is in a slot no longer current
		from := tickSlot(b)
		tx, ackSlot := open(b, 1)
		reclaimed := reclaimsWhile(t, s, 8)
		if reclaimed[from] == 0 || reclaimed[ackSlot] != 0 {
			t.Fatalf("reclaims with a CompleteTx open: %v; want slot %d (the batch's tick) reclaimed, slot %d (its ack) not", reclaimed, from, ackSlot)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		fenced, err := s.Flush(ctx, 1, 1, true, []Ack{{Batch: b, Job: &b.Jobs[0], State: AckCompleted, IfAbsent: true}}, []*Batch{b})
		if err != nil || len(fenced) != 0 {
			t.Fatalf("the acker's flush after the CompleteTx committed: %v, fenced %v", err, fenced)
		}
		var acks int
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.ack WHERE job_id = $1", id).Scan(&acks)
		if acks != 1 {
			t.Fatalf("%d acks of job %d; want 1", acks, id)
		}
		reclaimsWhile(t, s, 8)
		if got := claimAll(t, s, "q", 2, noLimit); len(got) != 0 {
			t.Fatalf("claimed %v after the job was completed", got)
		}
		if st, err := s.JobState(ctx, id); err != nil || st != "completed" {
			t.Fatalf("job %d: %q %v; want completed", id, st, err)
		}
	})

	t.Run("rolled back", func(t *testing.T) {
		b, id := claim(3)
		rotate(t, s, 0)
		from := tickSlot(b)
		tx, _ := open(b, 3)
		if reclaimed := reclaimsWhile(t, s, 8); reclaimed[from] == 0 {
			t.Fatalf("reclaims with a CompleteTx open: %v; want slot %d (the batch's tick) reclaimed", reclaimed, from)
		}
		tx.Rollback(ctx)
		if n, err := s.Release(ctx, 3); err != nil || n != 1 {
			t.Fatalf("release: %d %v", n, err)
		}
		got := claimAll(t, s, "q", 4, noLimit)
		if len(got) != 1 || got[id] != 1 {
			t.Fatalf("claimed %v after the CompleteTx rolled back; want job %d once", got, id)
		}
	})

	t.Run("release waits", func(t *testing.T) {
		b, id := claim(5)
		tx, _ := open(b, 5)
		released := make(chan int, 1)
		go func() {
			n, err := s.Release(ctx, 5)
			if err != nil {
				t.Error(err)
			}
			released <- n
		}()
		waitBlocked(t, pool)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		<-released
		reclaimsWhile(t, s, 8)
		if got := claimAll(t, s, "q", 6, noLimit); got[id] != 0 {
			t.Fatalf("job %d, completed by a CompleteTx a release waited for, was claimed again: %v", id, got)
		}
		if st, err := s.JobState(ctx, id); err != nil || st != "completed" {
			t.Fatalf("job %d: %q %v; want completed", id, st, err)
		}
	})
}

// TestKeysJudgedBeforeTheLocks: rotate judges a slot's unique keys before
// it locks the slot, and the reclaim carries what that judgment kept plus
// every key written since, judged under the locks: a key committed into
// the slot between the two is not lost.
func TestKeysJudgedBeforeTheLocks(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	uniq := func(key string) Inserted {
		t.Helper()
		r, err := insertOn(ctx, pool, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: key}}, false)
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	early := uniq("early")
	var slot int16
	if err := pool.QueryRow(ctx, "SELECT slot FROM millrace.uniq WHERE key = 'early'").Scan(&slot); err != nil {
		t.Fatal(err)
	}
	// The judgment rotate makes before the locks.
	var judged []int64
	var kept string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg((j.u).job_id), '{}'), coalesce(array_agg(j.u) FILTER (WHERE j.blocks), '{}')::text
		FROM millrace.uniq_judge($1) j`, slot).Scan(&judged, &kept); err != nil {
		t.Fatal(err)
	}
	if len(judged) != 1 || judged[0] != early.ID {
		t.Fatalf("judged %v before the locks; want [%d]", judged, early.ID)
	}
	late := uniq("late") // after the judgment, into the same slot
	var lateSlot int16
	if err := pool.QueryRow(ctx, "SELECT slot FROM millrace.uniq WHERE key = 'late'").Scan(&lateSlot); err != nil || lateSlot != slot {
		t.Fatalf("the late key went to slot %d (%v); want %d", lateSlot, err, slot)
	}
	rotate(t, s, 0)
	into := int16(-1)
	if err := pool.QueryRow(ctx, "SELECT millrace.current_segment()").Scan(&into); err != nil || into == slot {
		t.Fatalf("current slot %d (%v) after rotating away from %d", into, err, slot)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	lockSlot(t, tx, int(slot))
	if _, err := tx.Exec(ctx, "SELECT millrace.reclaim_slot($1, $2, $2, $3::millrace.uniq[], $4)", slot, into, kept, judged); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var carried []int64
	if err := pool.QueryRow(ctx, "SELECT coalesce(array_agg(job_id ORDER BY job_id), '{}') FROM millrace.uniq WHERE slot = $1", into).Scan(&carried); err != nil {
		t.Fatal(err)
	}
	if len(carried) != 2 || carried[0] != early.ID || carried[1] != late.ID {
		t.Fatalf("keys carried into slot %d: %v; want jobs %d (judged before the locks) and %d (written after)", into, carried, early.ID, late.ID)
	}
	for _, k := range []struct {
		key string
		id  int64
	}{{"early", early.ID}, {"late", late.ID}} {
		if again := uniq(k.key); !again.Duplicate || again.ID != k.id {
			t.Fatalf("key %q after the reclaim: %+v; want a duplicate of job %d", k.key, again, k.id)
		}
	}
}

// TestReclaimCarriesLaneFrontiers: a reclaim carries forward each lane's
// newest tick of the slot, as a frontier, when the lane has job rows in
// another slot, and forgets the frontier of a lane that has none (an idle
// lane starts again from nothing). The lane whose frontier was carried
// then claims its new job, and only it.
func TestReclaimCarriesLaneFrontiers(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	var from int16
	if err := pool.QueryRow(ctx, "SELECT millrace.current_segment()").Scan(&from); err != nil {
		t.Fatal(err)
	}
	a1, c1 := enqueue(t, s, pool, "a"), enqueue(t, s, pool, "c")
	if got := finishAll(t, s, "a", 1, 0); got[a1] != 1 {
		t.Fatalf("lane a finished %v", got)
	}
	if got := finishAll(t, s, "c", 1, 100); got[c1] != 1 {
		t.Fatalf("lane c finished %v", got)
	}
	newest := func(queue string) (id int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT max(tick_id) FROM millrace.tick WHERE queue = $1", queue).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	ta, tc := newest("a"), newest("c")
	rotate(t, s, 0)
	var into int16
	if err := pool.QueryRow(ctx, "SELECT millrace.current_segment()").Scan(&into); err != nil || into == from {
		t.Fatalf("current slot %d (%v), want one other than %d", into, err, from)
	}
	a2 := enqueue(t, s, pool, "a") // lane a has a row outside the slot reclaimed; lane c none
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	lockSlot(t, tx, int(from))
	if _, err := tx.Exec(ctx, "SELECT millrace.reclaim_slot($1, $2, $2)", from, into); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	carried := map[int64]bool{}
	rows, err := pool.Query(ctx, "SELECT tick_id, carried FROM millrace.tick WHERE slot = $1", into)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var c bool
		if err := rows.Scan(&id, &c); err != nil {
			t.Fatal(err)
		}
		carried[id] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if c, ok := carried[ta]; !ok || !c {
		t.Fatalf("ticks in slot %d after the reclaim: %v; want lane a's newest, %d, carried as its frontier", into, carried, ta)
	}
	if _, ok := carried[tc]; ok {
		t.Fatalf("ticks in slot %d after the reclaim: %v; lane c's frontier %d carried, want it forgotten (the lane is idle)", into, carried, tc)
	}
	if got := claimAll(t, s, "a", 1, noLimit); len(got) != 1 || got[a2] != 1 {
		t.Fatalf("lane a claimed %v after the reclaim; want job %d once", got, a2)
	}
}
