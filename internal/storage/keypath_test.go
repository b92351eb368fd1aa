package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millrace/millrace/internal/testkit"
)

// keyMap is one process's map of a per-key limit (a row of millrace.keyhold).
type keyMap struct {
	Keys  []string
	N     []int32
	Slots []*int32
	Until []*time.Time
}

// randomKeyMap makes a map over some of keys (kept in order, as every
// writer keeps them), with counts, slots and deferred ends around now.
func randomKeyMap(rng *rand.Rand, keys []string, now time.Time) keyMap {
	m := keyMap{Keys: []string{}, N: []int32{}, Slots: []*int32{}, Until: []*time.Time{}}
	for _, k := range keys {
		if rng.IntN(2) == 0 {
			continue
		}
		m.Keys = append(m.Keys, k)
		n := rng.IntN(4)
		if rng.IntN(4) == 0 {
			n = rng.IntN(25) // past a buffer of eight a slot
		}
		m.N = append(m.N, int32(n))
		var s *int32
		if rng.IntN(4) > 0 {
			v := int32(rng.IntN(4))
			s = &v
		}
		m.Slots = append(m.Slots, s)
		var u *time.Time
		if rng.IntN(2) == 0 {
			v := now.Add(time.Duration(rng.IntN(41)-20) * time.Second)
			u = &v
		}
		m.Until = append(m.Until, u)
	}
	return m
}

// TestOneKeyPathsMatchTheirStatements: key_defer given a batch of one job
// under a per-key limit alone, and keyhold_put given one key, work their
// answer out in variables rather than run their general statement. Over
// random maps and inputs, each answers for its key what the general
// statement answers (a batch with a second job of an unrelated key, and
// a second key that changes nothing, take the statement).
func TestOneKeyPathsMatchTheirStatements(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	rng := rand.New(rand.NewPCG(33, 34))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := []string{"a", "b", "c"}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// inSavepoint runs f and undoes what it wrote.
	inSavepoint := func(f func() error) {
		t.Helper()
		if _, err := tx.Exec(ctx, "SAVEPOINT k"); err != nil {
			t.Fatal(err)
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT k"); err != nil {
			t.Fatal(err)
		}
	}
	putMap := func(owner int32, m keyMap) error {
		if len(m.Keys) == 0 && rng.IntN(2) == 0 {
			return nil // no map at all
		}
		_, err := tx.Exec(ctx, `INSERT INTO millrace.keyhold (slot, queue, owner, keys, n, slots, until)
			VALUES (millrace.current_segment(), 'kp', $1, $2, $3, $4, $5)`, owner, m.Keys, m.N, m.Slots, m.Until)
		return err
	}
	deferCases, fast, fullCases := 0, 0, 0
	for i := range 400 {
		if _, err := tx.Exec(ctx, "SAVEPOINT c"); err != nil {
			t.Fatal(err)
		}
		for owner := int32(1); owner <= 3; owner++ {
			if err := putMap(owner, randomKeyMap(rng, keys, now)); err != nil {
				t.Fatal(err)
			}
		}
		key := []string{"a", "b", "d"}[rng.IntN(3)] // the key of the given maps
		perKey := 1 + rng.IntN(3)
		paceText := []string{"", "5 ms", "200 ms"}[rng.IntN(3)]
		var pace *string // NULL: key_defer's default
		if paceText != "" {
			pace = &paceText
		}
		in := func() string {
			switch rng.IntN(3) {
			case 0:
				return "{}"
			case 1:
				return fmt.Sprintf(`{%q: %d, "b": %d}`, key, rng.IntN(12), rng.IntN(3))
			}
			return `{"zz": 1}`
		}
		taken, slots := in(), in()
		until := "{}"
		if rng.IntN(2) == 0 {
			until = fmt.Sprintf(`{%q: %q}`, key, now.Add(time.Duration(rng.IntN(21)-10)*time.Second).Format(time.RFC3339Nano))
		}
		// A batch of one to eight jobs of the keys, some from the schedule.
		var jobs []string
		var ids []int64
		batchKeys := map[string]bool{}
		job := func(id int64, key string, again bool) string {
			ready := "0 s"
			if again {
				ready = "1 s"
			}
			return fmt.Sprintf(`ROW(0, %d, 'kp', 'k', jsonb_build_object('c', %s), 1, 0, 3, $1::timestamptz, '1'::xid8, $1::timestamptz + interval '%s', 0)::millrace.job`,
				id, pgQuote(key), ready)
		}
		for j := range 1 + rng.IntN(8) {
			k := key
			if rng.IntN(3) == 0 {
				k = []string{"a", "b", "d"}[rng.IntN(3)]
			}
			id := int64(1000*i + j)
			jobs, ids = append(jobs, job(id, k, rng.IntN(2) == 0)), append(ids, id)
			batchKeys[k] = true
		}
		// What key_defer answers for the batch's keys and jobs: each key's
		// slots, taken and end of deferred jobs; each job's fate (runs,
		// waits, or deferred and when).
		ask := func(jobs []string) string {
			var out string
			inSavepoint(func() error {
				var p, tk, u json.RawMessage
				var deferred, waiting []int64
				err := tx.QueryRow(ctx, `SELECT d.p_slots, d.p_taken, d.p_until, d.deferred, d.waiting
					FROM millrace.key_defer('kp', 1, 7, 7, ARRAY[`+strings.Join(jobs, ", ")+`], $2, NULL, NULL, '{args.c}', '{2,3}', $3::interval, $1,
					                        $4::jsonb, $5::jsonb, $6::jsonb) d`,
					now, perKey, pace, taken, until, slots).Scan(&p, &tk, &u, &deferred, &waiting)
				if err != nil {
					return err
				}
				var maps [3]map[string]json.RawMessage
				for x, raw := range []json.RawMessage{p, tk, u} {
					if err := json.Unmarshal(raw, &maps[x]); err != nil {
						return err
					}
				}
				var fullKeys []string
				if err := tx.QueryRow(ctx, `SELECT coalesce(nullif(current_setting('millrace.full_keys', true), ''), '{}')::text[]`).Scan(&fullKeys); err != nil {
					return err
				}
				for _, k := range []string{"a", "b", "d"} {
					if batchKeys[k] {
						out += fmt.Sprintf("key %s: slots %s taken %s until %s full %v; ", k, maps[0][k], maps[1][k], maps[2][k], slices.Contains(fullKeys, k))
						if slices.Contains(fullKeys, k) {
							fullCases++
						}
					}
				}
				for _, id := range ids {
					switch {
					case slices.Contains(deferred, id):
						deferCases++
						var due time.Time
						if err := tx.QueryRow(ctx, `SELECT due_at FROM millrace.sched WHERE id = $1`, id).Scan(&due); err != nil {
							return err
						}
						out += fmt.Sprintf("job %d deferred to %s; ", id, due.UTC().Format(time.RFC3339Nano))
					case slices.Contains(waiting, id):
						out += fmt.Sprintf("job %d waits; ", id)
					default:
						out += fmt.Sprintf("job %d runs; ", id)
					}
				}
				return nil
			})
			return out
		}
		small := ask(jobs)
		// The same batch with nine jobs more, of keys of their own: past
		// eight jobs, key_defer runs its statement.
		filled := slices.Clone(jobs)
		for j := range 9 {
			filled = append(filled, job(int64(1000*i+100+j), fmt.Sprintf("zz%d", j), false))
		}
		if general := ask(filled); small != general {
			t.Fatalf("case %d (per key %d, pace %q, taken %s, slots %s, until %s):\nkey_defer of the batch: %s\nits statement: %s",
				i, perKey, paceText, taken, slots, until, small, general)
		}

		// keyhold_put of one key, against the statement (a second key
		// that adds nothing, holds nothing and leaves the map).
		dn := rng.IntN(5) - 2
		var s *int32
		if rng.IntN(2) == 0 {
			v := int32(rng.IntN(4))
			s = &v
		}
		var u *time.Time
		if rng.IntN(3) == 0 {
			v := time.Now().Add(time.Duration(rng.IntN(3)-1) * time.Minute)
			u = &v
		}
		put := func(two bool) (m keyMap, rows int) {
			inSavepoint(func() error {
				ks, dns, ss, us := []string{key}, []int32{int32(dn)}, []*int32{s}, []*time.Time{u}
				if two {
					ks, dns, ss, us = append(ks, "zzz"), append(dns, 0), append(ss, nil), append(us, nil)
				}
				if _, err := tx.Exec(ctx, `SELECT millrace.keyhold_put('kp', 1, $1, $2, $3, $4)`, ks, dns, ss, us); err != nil {
					return err
				}
				err := tx.QueryRow(ctx, `SELECT h.keys, h.n, h.slots, h.until, (SELECT count(*) FROM millrace.keyhold x WHERE x.queue = 'kp' AND x.owner = 1)
					FROM millrace.keyhold h WHERE h.queue = 'kp' AND h.owner = 1 ORDER BY h.id DESC LIMIT 1`).Scan(&m.Keys, &m.N, &m.Slots, &m.Until, &rows)
				if err == pgx.ErrNoRows {
					return nil
				}
				return err
			})
			return m, rows
		}
		m1, r1 := put(false)
		m2, r2 := put(true)
		if fmt.Sprint(m1.Keys, m1.N, deref(m1.Slots), derefT(m1.Until), r1) != fmt.Sprint(m2.Keys, m2.N, deref(m2.Slots), derefT(m2.Until), r2) {
			t.Fatalf("case %d: keyhold_put(%s, %d, %v, %v) of one key wrote %v %v %v %v (%d rows); the statement %v %v %v %v (%d rows)",
				i, key, dn, deref([]*int32{s}), derefT([]*time.Time{u}), m1.Keys, m1.N, deref(m1.Slots), derefT(m1.Until), r1,
				m2.Keys, m2.N, deref(m2.Slots), derefT(m2.Until), r2)
		}
		if !slices.Contains(m1.N, 0) {
			fast++
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT c"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d jobs deferred, %d keys left full (each counted twice); %d of 400 maps without an empty key", deferCases, fullCases, fast)
	// The cases reach every branch: some jobs deferred, some maps taking
	// keyhold_put's path for one key.
	if deferCases < 100 || fullCases < 100 || fast < 100 {
		t.Fatalf("%d jobs deferred, %d keys full, %d maps without an empty key: the cases miss a branch", deferCases, fullCases, fast)
	}
}

func pgQuote(s string) string { return "'" + s + "'" }

func deref(xs []*int32) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "NULL"
		if x != nil {
			out[i] = fmt.Sprint(*x)
		}
	}
	return out
}

func derefT(xs []*time.Time) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "NULL"
		if x != nil {
			out[i] = x.UTC().Format(time.RFC3339Nano)
		}
	}
	return out
}

// keyedQueue is limitedQueue's queue under a per-key limit of perKey,
// keyed by args field c, and add, which enqueues a job of key c there.
func keyedQueue(t *testing.T, queue string, perKey int) (s *Store, a, b int32, add func(c string)) {
	t.Helper()
	ctx := context.Background()
	s, pool, a, b := limitedQueue(t, queue, 0, 0)
	if err := SetLimit(ctx, pool, queue, Limit{PerKey: perKey, Key: []string{"args.c"}}); err != nil {
		t.Fatal(err)
	}
	add = func(c string) {
		t.Helper()
		args, err := json.Marshal(map[string]string{"c": c})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enqueue(ctx, pool, NewJob{Queue: queue, Kind: "k", Args: args, Priority: 1, MaxAttempts: 3}, false); err != nil {
			t.Fatal(err)
		}
	}
	return s, a, b, add
}

// TestClaimSaysWhichKeysAreFull: a claim says of each job of a per-key
// limit whether it left every slot of the job's key held (KeyFull), by
// this process and the other live ones together: with a limit of two,
// a first job of a key leaves it room, a second job taken by another
// process fills it, and a key of its own has room.
func TestClaimSaysWhichKeysAreFull(t *testing.T) {
	ctx := context.Background()
	s, a, b, add := keyedQueue(t, "kf", 2)
	full := func(owner int32, req int64) string {
		t.Helper()
		bs, seen, err := s.ClaimSeen(ctx, "kf", owner, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Start: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range bs {
			for _, j := range x.Jobs {
				out = append(out, fmt.Sprintf("%s:%v", j.Key, j.KeyFull))
			}
		}
		return fmt.Sprint(out, seen.FullKeys)
	}
	add("x")
	if got := full(a, 1); got != "[x:false] []" {
		t.Fatalf("a first job of key x, limit 2: %s; want [x:false] []", got)
	}
	add("x")
	add("y")
	if got := full(b, 2); got != "[x:true y:false] [x]" {
		t.Fatalf("a second job of x in another process, and one of y: %s; want [x:true y:false] [x]", got)
	}
	// A key of any text comes back whole (the setting is an array
	// literal): quotes, a comma, braces, a backslash.
	odd := `a,"{b}"\ c`
	add(odd)
	full(a, 3)
	add(odd)
	if got, want := full(b, 4), fmt.Sprint([]string{odd + ":true"}, []string{odd}); got != want {
		t.Fatalf("two jobs of key %q in two processes: %s; want %s", odd, got, want)
	}
}

// TestKeyedBatchMarkedWholeWhenNoneWaits: a claim that hands every job of
// a batch of a per-key limit to an idle worker marks the batch started on
// its tick, with no start row, when no job of it waits in the process for
// its key's slot; when one waits, the tick is not marked and the others
// get a start row (the waiting one is marked when it starts).
func TestKeyedBatchMarkedWholeWhenNoneWaits(t *testing.T) {
	ctx := context.Background()
	s, a, _, add := keyedQueue(t, "kw", 1)
	claim := func(req int64) (tick int64, waits int) {
		t.Helper()
		bs, _, err := s.ClaimSeen(ctx, "kw", a, req, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Start: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1 {
			t.Fatalf("claim %d: %d batches; want 1", req, len(bs))
		}
		for _, j := range bs[0].Jobs {
			if j.KeyWaits {
				waits++
			}
		}
		return bs[0].TickID, waits
	}
	marks := func(tick int64) (started bool, rows, jobs int) {
		t.Helper()
		if err := s.Pool.QueryRow(ctx, `SELECT t.started, (SELECT count(*) FROM millrace.start s WHERE s.tick_id = t.tick_id),
			(SELECT coalesce(sum(cardinality(s.jobs)), 0) FROM millrace.start s WHERE s.tick_id = t.tick_id)
			FROM millrace.tick t WHERE t.tick_id = $1`, tick).Scan(&started, &rows, &jobs); err != nil {
			t.Fatal(err)
		}
		return
	}
	add("x")
	add("y")
	tick, waits := claim(1)
	if started, rows, _ := marks(tick); waits != 0 || !started || rows != 0 {
		t.Fatalf("two keys, one job each, idle workers: %d waiting, tick started %v, %d start rows; want 0, true, 0", waits, started, rows)
	}
	add("z")
	add("z")
	tick, waits = claim(2)
	if started, rows, jobs := marks(tick); waits != 1 || started || rows != 1 || jobs != 1 {
		t.Fatalf("two jobs of one key (limit 1): %d waiting, tick started %v, %d start rows of %d jobs; want 1, false, 1 of 1",
			waits, started, rows, jobs)
	}
}
