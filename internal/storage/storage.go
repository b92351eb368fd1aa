// Package storage is the Go side of the millrace storage protocol: enqueue,
// claim of a capped batch by snapshot tick, per-job acks flushed in bulk
// with fencing and idempotence, and the maintenance steps (rotation and
// reclaim of the ring, rescue, promotion) that are the only writers allowed
// to run at maintenance cadence. Every statement of the protocol calls a
// function of schema millrace (internal/schema); the leader's views of the
// server's backends (maint.go: who holds a slot, who does not read its
// notifications) read its statistics and lock tables. See
// docs/architecture.md for the invariants each keeps.
//
// It is the one door to the database for the queue's code: the inspection
// reads that package millrace and package ops share (reads.go, one
// implementation of each), the operator actions (admin.go), LISTEN and
// NOTIFY (listen.go), the session connection's settings (session.go) and
// the server's clock and recovery (server.go) are here too, and return
// structured rows. TestStorageIsTheOneDoor, at the module's root, fails on
// statement text anywhere else (docs/contributing.md).
package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LockSpace is the first key of millrace's transaction-level advisory
// locks on leases (millrace.lock_space() in SQL). Second keys: 0 leader
// takeovers and renewals, a process id that process's heartbeats. Claims,
// fences, flushes and maintenance each have their own key space
// (millrace.claim_space() and so on).
const LockSpace = 1836412274

// Ack states, as stored in millrace.ack.state and millrace.finished.state.
const (
	AckCompleted int16 = 1
	AckRetried   int16 = 2 // failed; runs again after its backoff
	AckDiscarded int16 = 3
	AckCancelled int16 = 4
	AckSnoozed   int16 = 5 // runs again after a delay; not counted as an attempt
	// AckKeyFreed is no outcome: a job that will not run in this process
	// (its batch was released) gives back its key's slot of a per-key
	// limit with the flush, and nothing else is written for it.
	AckKeyFreed int16 = -2
)

// Job is a stored job as a worker receives it.
type Job struct {
	ID          int64
	Queue       string
	Kind        string
	Args        []byte
	Priority    int16
	Attempt     int // attempts made before this one
	MaxAttempts int
	CreatedAt   time.Time
	ReadyAt     time.Time     // when it became ready to run (enqueued, or due)
	Timeout     time.Duration // the job's own timeout (0: its kind's)
	Cancelled   bool          // cancelled before it ran: ack it cancelled, do not run it
	// Key is the job's key under its queue's per-key limit
	// (millrace.job_key; "" without one): it holds one of the key's
	// slots from its claim until the flush of its outcome (or of
	// AckKeyFreed).
	Key string
	// KeySlots is, under a per-key limit, how many of the key's jobs the
	// claimer may run at once, as its claim wrote them; KeyWaits says
	// the job is one the claim took beyond them (a buffer): it starts
	// when a job of its key ends in the claimer, and the claim did not
	// mark it started.
	KeySlots int32
	KeyWaits bool
	// KeyFull says the claim left every slot of the job's key held (by
	// this process and the other live ones): another process may be
	// waiting for one, so the flush of the job's end should go out soon.
	KeyFull bool
}

// Batch is a claimed tick: jobs of one queue that committed between two
// snapshots, leased to one process under a fencing token.
type Batch struct {
	Queue  string
	TickID int64
	Token  int64 // fencing token: TickID for the first lease, higher after a release
	Jobs   []Job
}

// NewJob is a job to enqueue.
type NewJob struct {
	Queue       string
	Kind        string
	Args        []byte // JSON
	Priority    int16
	RunAt       time.Time // zero: now
	MaxAttempts int
	Timeout     time.Duration
	// UniqueKey, when set, makes the job unique: it is not inserted while
	// the newest job with the same key still blocks it (unfinished, or
	// finished in a state of UniqueStates, within UniqueUntil).
	UniqueKey    string
	UniqueStates int       // bits: 2 completed, 4 discarded, 8 cancelled
	UniqueUntil  time.Time // end of the key's period (zero: none)
}

// Inserted is the result of inserting one job.
type Inserted struct {
	ID        int64
	Duplicate bool // a unique job with the same key blocked it; ID is that job's
	Scheduled bool // due later (RunAt in the future); for a duplicate, its job is scheduled
	// RunAt is when the job is due (now for a job inserted available);
	// for a duplicate, when the job that blocked it is due (scheduled),
	// became ready (available, running) or last started (finished).
	RunAt time.Time
	// State is where the job stands: scheduled or available for a job
	// inserted, and for a duplicate what job_state says of the job that
	// blocked it, read under its key's lock ("" if it has no live row left).
	State string
}

// Ack is the outcome of one attempt of one job of a batch.
type Ack struct {
	Batch *Batch
	Job   *Job
	State int16
	Err   string
	// RetryAt is when a retried or snoozed job runs again.
	RetryAt time.Time
	// Started and Finished time the attempt (zero Started: it never ran).
	Started, Finished time.Time
	// IfAbsent marks an ack the job's own transaction may already have
	// written (transactional completion): the flush skips it if so.
	IfAbsent bool
}

// Limits bound one claim.
type Limits struct {
	MaxJobs  int   // at most this many jobs
	MaxBytes int64 // stop once the batch's args reach this many bytes (at least one job)
	// Starve is how long a lane's (priority's) first job may wait before
	// the lane is served ahead of higher priorities (0: 5s).
	Starve time.Duration
	// Start is how many of the jobs returned (the first ones not
	// cancelled) start at once: the claim records their start marks (see
	// MarkStarted), so that they need none of their own.
	Start int
	// Held is what the caller has in hand of the queue: jobs it claimed
	// that have not ended in it. A queue with a running limit
	// (millrace.set_limit) gives each process slots, at most that many
	// of its jobs running in it at once: a claim keeps the caller's slots
	// it has jobs in hand for, and gets at most the limit less what every
	// live process holds (Seen.Slots); nil leaves the caller's newest
	// count standing.
	Held *int
	// Buffer is how many jobs of a queue with a running limit the claim
	// may take beyond the caller's slots: they wait in the caller for one
	// of its slots, so that a freed slot starts the next job without a
	// claim. Ignored under a rate limit.
	Buffer int
	// Pace is how long a job of the queue takes in the caller (0: not
	// known yet): jobs a per-key limit defers come back one per slot of
	// their key at this pace.
	Pace time.Duration
}

// Store runs the protocol's statements on a pool.
type Store struct {
	Pool *pgxpool.Pool
}

// Querier is what Enqueue needs: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Insert inserts jobs in one statement through millrace.insert_many, in
// its own READ COMMITTED transaction on pool (unique keys need it, whatever
// the database's default), bounded by ctx and the caller's timeouts, and
// returns, in order, each job's id, whether it was a duplicate of a unique
// job, and its state. notify asks Postgres for one NOTIFY per queue with a
// job due now, sent at the commit (the client passes false here and
// coalesces its own notifications).
func Insert(ctx context.Context, pool *pgxpool.Pool, jobs []NewJob, notify bool) ([]Inserted, error) {
	return insertJobs(ctx, jobs, notify, func(scan func(pgx.Rows) error, sql string, args ...any) error {
		return PoolTx(ctx, pool, TxOpts{KeepTimeouts: true}, scan, sql, args...)
	})
}

// InsertTx is Insert inside the caller's transaction tx: the jobs exist
// only if tx commits, and notify's NOTIFYs are sent at that commit. The
// transaction's isolation is the caller's: unique keys need READ
// COMMITTED (millrace.insert_many says so otherwise).
func InsertTx(ctx context.Context, tx pgx.Tx, jobs []NewJob, notify bool) ([]Inserted, error) {
	return insertJobs(ctx, jobs, notify, func(scan func(pgx.Rows) error, sql string, args ...any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		err = scan(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		return err
	})
}

// insertJobs is Insert and InsertTx: run runs the statement, one way or
// the other, with scan reading its rows.
func insertJobs(ctx context.Context, jobs []NewJob, notify bool, run func(scan func(pgx.Rows) error, sql string, args ...any) error) ([]Inserted, error) {
	n := len(jobs)
	kinds, queues := make([]string, n), make([]string, n)
	args := make([]string, n)
	prios, maxAtt, timeouts := make([]int32, n), make([]int32, n), make([]int32, n)
	runAt, until := make([]*time.Time, n), make([]*time.Time, n)
	keys, states := make([]*string, n), make([]int32, n)
	for i, j := range jobs {
		kinds[i], queues[i], args[i] = j.Kind, j.Queue, string(j.Args)
		prios[i], maxAtt[i] = int32(j.Priority), int32(j.MaxAttempts)
		timeouts[i] = int32(j.Timeout.Milliseconds())
		if !j.RunAt.IsZero() {
			t := j.RunAt
			runAt[i] = &t
		}
		if j.UniqueKey != "" {
			k := j.UniqueKey
			keys[i], states[i] = &k, int32(j.UniqueStates)
			if !j.UniqueUntil.IsZero() {
				t := j.UniqueUntil
				until[i] = &t
			}
		}
	}
	out := make([]Inserted, 0, n)
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			var r Inserted
			var at *time.Time
			var st *string
			if err := rows.Scan(&r.ID, &r.Duplicate, &r.Scheduled, &at, &st); err != nil {
				return err
			}
			if at != nil {
				r.RunAt = *at
			}
			if st != nil {
				r.State = *st
			}
			out = append(out, r)
		}
		return nil
	}
	const sql = `SELECT id, duplicate, scheduled, run_at, state FROM millrace.insert_many(p_kind => $1,
		p_args => $2::jsonb[], p_queue => $3, p_priority => $4, p_run_at => $5, p_max_attempts => $6,
		p_unique_key => $7, p_unique_states => $8, p_unique_until => $9, p_timeout_ms => $10, p_notify => $11)`
	if err := run(scan, sql, kinds, args, queues, prios, runAt, maxAtt, keys, states, until, timeouts, notify); err != nil {
		return nil, err
	}
	return out, nil
}

// claimSeenSQL is a claim's statement as ClaimSeen sends it: the claim's
// rows, then one more row (tick_id NULL) with what the claim saw
// (seenCols), read once the claim has run (an Append runs its parts in
// order). A claim that writes no start row calls
// millrace.claim itself, as claim_start would, rather than through it.
// One statement and one function layer less per claim than claim_start
// and a statement of seenCols apart.
func claimSeenSQL(direct bool) string {
	call := `millrace.claim_start(p_queue => $1, p_owner => $2, p_req => $3, p_retry => $4,
		p_max_jobs => $5, p_max_bytes => $6, p_starve => $7, p_start => $8, p_held => $9, p_buffer => $10,
		p_pace => $11)`
	if direct {
		// claim_start's own short path: p_retry is false, and p_start is
		// none or every job (claim marks the new batches on their ticks).
		call = `millrace.claim(p_queue => $1, p_owner => $2, p_req => $3, p_retry => $4,
		p_max_jobs => $5, p_max_bytes => $6, p_starve => $7, p_start_all => coalesce($8 > 0, false), p_held => $9, p_buffer => $10,
		p_pace => $11)`
	}
	return `SELECT c.tick_id, c.token, c.id, c.kind, c.args, c.priority, c.attempt, c.max_attempts, c.created_at, c.ready_at,
	c.timeout_ms, c.cancelled, c.key, c.key_slots, c.waits, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
	FROM ` + call + ` c
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ` + seenCols
}

// Claim takes the next batches of queue for process owner: the batches
// whose reply an earlier call with the same req lost (when retry is set), a
// batch released by the leader, or the next jobs of each priority lane
// committed since the lane's newest tick, within lim. It returns nil when
// there is nothing to run (or the queue is paused).
//
// req identifies the call: after an error that may have come after the
// server committed (a lost reply), call again with the same req and retry
// set, and the batch that call committed comes back instead of being
// stranded.
//
// The claim commits asynchronously: its tick row does not wait for a WAL
// flush. That is safe because nothing durable depends on a tick before an
// ack of its batch commits, and an ack's synchronous commit flushes the WAL
// up to and past the tick's commit record. A tick lost in a crash of
// Postgres only means its jobs, none of them acked, are claimed again.
func (s *Store) Claim(ctx context.Context, queue string, owner int32, req int64, retry bool, lim Limits) ([]*Batch, error) {
	batches, _, err := s.ClaimSeen(ctx, queue, owner, req, retry, lim)
	return batches, err
}

// Peek asks, without a claim's lock or writes, whether a claim of queue
// would return nothing at once because the queue's newest batch already
// holds every job committed before the call (millrace.claim_peek): it
// returns the process that took that batch, or 0 when a claim may find
// work. A claimer that keeps losing announcements asks it first: most of
// its claims found nothing. It is one statement, in no transaction of its
// own, with the role's timeouts (an error only means a claim follows):
// 0.18 ms of server CPU against 0.29 in a transaction with its settings and
// 0.41 for the empty claim (pgbench). At a default isolation stricter than
// READ COMMITTED it answers 0.
func (s *Store) Peek(ctx context.Context, queue string) (takenBy int32, err error) {
	err = s.Pool.QueryRow(ctx, "SELECT millrace.claim_peek($1)", queue).Scan(&takenBy)
	return takenBy, err
}

// seenCols read, in a claim's transaction once it has run, the process
// that took the batch which left the claim nothing (millrace.claimed_by,
// set by the claim's short cut; 0 when it was not taken), and the queue's
// concurrency limit (millrace.limit; 0: none), whether a limit bound the
// claim (millrace.full), when a full rate window has room again
// (millrace.retry_in), the queue's rate (millrace.rate; 0: none) and the
// caller's slots of its running limit (millrace.slots), and whether a
// per-key limit deferred jobs to the schedule (millrace.deferred), and
// the keys of a per-key limit whose slots the claim left all held
// (millrace.full_keys).
const seenCols = "coalesce(nullif(current_setting('millrace.claimed_by', true), ''), '0')::int, " +
	"coalesce(nullif(current_setting('millrace.limit', true), ''), '0')::int, coalesce(current_setting('millrace.full', true), '') = '1', " +
	"coalesce(nullif(current_setting('millrace.retry_in', true), ''), '0')::int, coalesce(nullif(current_setting('millrace.rate', true), ''), '0')::int, " +
	"coalesce(nullif(current_setting('millrace.slots', true), ''), '0')::int, coalesce(current_setting('millrace.deferred', true), '') = '1', " +
	"coalesce(nullif(current_setting('millrace.full_keys', true), ''), '{}')::text[]"

// Seen is what a claim saw besides its jobs.
type Seen struct {
	// TakenBy is, when the claim returned nothing at once because the
	// queue's newest batch already held every job the call could know of,
	// the process that took that batch (0 otherwise, or when the claim
	// returned jobs).
	TakenBy int32
	// Limit is the queue's concurrency limit (0: none).
	Limit int32
	// Full says a limit bound the claim: it took all the limit left,
	// maybe nothing (the live processes hold it all, or the rate's window
	// is full).
	Full bool
	// RetryIn, when a rate limit left the claim nothing, is when its
	// window has room again.
	RetryIn time.Duration
	// Rate is the queue's rate limit: starts per its period (0: none).
	Rate int32
	// Slots is, under a running limit, how many of the queue's jobs the
	// caller may run at once: the claim wrote it as the caller's count.
	Slots int32
	// Deferred says a per-key limit deferred jobs of the claim's batches
	// to the schedule (the promoter may need a word: they are due soon).
	Deferred bool
	// FullKeys are the keys of a per-key limit whose slots the claim left
	// all held (each job of one says KeyFull).
	FullKeys []string
}

// ClaimSeen is Claim, and also says what the claim saw (Seen). A claimer
// that keeps finding another process's batch at the queue's head lost
// the race for each announcement, and may answer them later; one whose
// queue is limited claims again as its jobs finish (internal/pool). It
// costs one more statement in the claim's round trip.
func (s *Store) ClaimSeen(ctx context.Context, queue string, owner int32, req int64, retry bool, lim Limits) (batches []*Batch, seen Seen, err error) {
	starve := lim.Starve
	if starve <= 0 {
		starve = 5 * time.Second
	}
	byTick := map[int64]*Batch{}
	var seenRow bool
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			if rows.RawValues()[0] == nil {
				// The last row: what the claim saw.
				var ms int32
				if err := rows.Scan(nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
					&seen.TakenBy, &seen.Limit, &seen.Full, &ms, &seen.Rate, &seen.Slots, &seen.Deferred, &seen.FullKeys); err != nil {
					return err
				}
				seen.RetryIn = time.Duration(ms) * time.Millisecond
				seenRow = true
				continue
			}
			var tick, token int64
			var timeoutMS int32
			var j Job
			var key *string
			var slots *int32
			if err := rows.Scan(&tick, &token, &j.ID, &j.Kind, &j.Args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt,
				&j.ReadyAt, &timeoutMS, &j.Cancelled, &key, &slots, &j.KeyWaits, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
				return err
			}
			if key != nil {
				j.Key = *key
			}
			if slots != nil {
				j.KeySlots = *slots
			}
			j.Queue = queue
			j.Timeout = time.Duration(timeoutMS) * time.Millisecond
			batch := byTick[tick]
			if batch == nil {
				batch = &Batch{Queue: queue, TickID: tick, Token: token}
				byTick[tick] = batch
				batches = append(batches, batch)
			}
			batch.Jobs = append(batch.Jobs, j)
		}
		return nil
	}
	c, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, Seen{}, err
	}
	defer c.Release()
	direct := !retry && (lim.Start <= 0 || lim.Start >= lim.MaxJobs)
	err = runTx(ctx, c.Conn(), TxOpts{AsyncCommit: true},
		stmt{sql: claimSeenSQL(direct), args: []any{queue, owner, req, retry, lim.MaxJobs, lim.MaxBytes, starve, lim.Start, lim.Held, lim.Buffer, paceArg(lim.Pace)}, scan: scan})
	if err == nil && !seenRow {
		err = errors.New("millrace: a claim's reply ended before what it saw")
	}
	if err != nil {
		return nil, Seen{}, err
	}
	if len(batches) > 0 {
		seen.TakenBy = 0
	}
	if len(seen.FullKeys) > 0 {
		for _, b := range batches {
			for i := range b.Jobs {
				b.Jobs[i].KeyFull = b.Jobs[i].Key != "" && slices.Contains(seen.FullKeys, b.Jobs[i].Key)
			}
		}
	}
	return batches, seen, nil
}

// paceArg is pace as the claim's p_pace: NULL when not known.
func paceArg(pace time.Duration) any {
	if pace <= 0 {
		return nil
	}
	return pace
}

// QueuesWithWork returns the queues of names that a claim might find
// work in (millrace.queues_with_work): those with a job row or a
// released batch. One statement answers for many idle queues, where a
// claim each would cost a transaction each.
func (s *Store) QueuesWithWork(ctx context.Context, names []string) ([]string, error) {
	var out []string
	err := s.tx(ctx, func(rows pgx.Rows) error {
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				return err
			}
			out = append(out, q)
		}
		return nil
	}, "SELECT millrace.queues_with_work($1)", names)
	return out, err
}

// MaxErrorBytes caps the error text stored with an ack.
const MaxErrorBytes = 16 << 10

// CleanText makes s storable as Postgres text: invalid UTF-8 becomes U+FFFD,
// NUL bytes become the two characters `\0`, and the result is cut to at
// most MaxErrorBytes bytes on a character boundary.
func CleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", `\0`)
	}
	if len(s) > MaxErrorBytes {
		cut := MaxErrorBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// Flush writes acks and the batches they complete through millrace.flush,
// in one transaction, once per (owner, seq): replaying a flush whose reply
// was lost changes nothing. Batches re-leased since (released by the leader
// or adopted by another process) are fenced: their acks and done rows are
// dropped and their ticks returned.
//
// replay says this (owner, seq) may have been sent before (an earlier
// attempt lost its reply): the server then also skips each ack it already
// holds, which costs an index probe per ack that a first attempt need not
// pay.
//
// Every ack of a job with a Key (AckKeyFreed ones included, which are
// not written as acks) gives back the key's slot: the flush counts them
// per queue and key, fenced or not.
func (s *Store) Flush(ctx context.Context, owner int32, seq int64, replay bool, acks []Ack, done []*Batch) (fenced []int64, err error) {
	fenced, _, err = s.FlushShift(ctx, owner, seq, replay, acks, done)
	return fenced, err
}

// FlushShift is Flush, and also returns the shift the server read the
// worker's times with (its clock as the flush began less the newest
// Finished of the flush's outcomes; 0 without one): a retry's or snooze's
// RetryAt plus shift is when it falls due on the server's clock (sooner by
// at most the flush's wait for its lock: a promote round run that early
// finds it not yet due and plans the next for its time), which the caller
// can tell the leader's promoter.
func (s *Store) FlushShift(ctx context.Context, owner int32, seq int64, replay bool, acks []Ack, done []*Batch) (fenced []int64, shift time.Duration, err error) {
	if len(acks) == 0 && len(done) == 0 {
		return nil, 0, nil
	}
	type qk struct{ queue, key string }
	var freed map[qk]int32
	outcomes := acks[:0:0]
	for _, a := range acks {
		if a.Job.Key != "" {
			if freed == nil {
				freed = map[qk]int32{}
			}
			freed[qk{a.Job.Queue, a.Job.Key}]++
		}
		if a.State != AckKeyFreed {
			outcomes = append(outcomes, a)
		}
	}
	keyQueues, keys, keyN := make([]string, 0, len(freed)), make([]string, 0, len(freed)), make([]int32, 0, len(freed))
	for k, n := range freed {
		keyQueues, keys, keyN = append(keyQueues, k.queue), append(keys, k.key), append(keyN, n)
	}
	acks = outcomes
	n := len(acks)
	var (
		jobIDs, ticks, tokens = make([]int64, n), make([]int64, n), make([]int64, n)
		states                = make([]int16, n)
		attempts, maxAtt      = make([]int32, n), make([]int32, n)
		timeouts              = make([]int32, n)
		errs                  = make([]*string, n)
		retryAt, createdAt    = make([]*time.Time, n), make([]time.Time, n)
		started, finished     = make([]*time.Time, n), make([]*time.Time, n)
		queues, kinds         = make([]string, n), make([]string, n)
		args                  = make([]*string, n) // nil for a completed job: history keeps no args of one
		prios                 = make([]int16, n)
	)
	for i, a := range acks {
		j := a.Job
		jobIDs[i], ticks[i], tokens[i], states[i] = j.ID, a.Batch.TickID, a.Batch.Token, a.State
		attempts[i] = int32(j.Attempt + 1)
		if a.IfAbsent {
			replay = true
		}
		if a.Err != "" {
			e := CleanText(a.Err)
			errs[i] = &e
		}
		if a.State == AckRetried || a.State == AckSnoozed {
			t := a.RetryAt
			retryAt[i] = &t
		}
		if !a.Started.IsZero() {
			t := a.Started
			started[i] = &t
		}
		if !a.Finished.IsZero() {
			t := a.Finished
			finished[i] = &t
		}
		queues[i], kinds[i], prios[i], maxAtt[i], createdAt[i] = j.Queue, j.Kind, j.Priority, int32(j.MaxAttempts), j.CreatedAt
		if a.State != AckCompleted {
			a := string(j.Args)
			args[i] = &a
		}
		timeouts[i] = int32(j.Timeout.Milliseconds())
	}
	doneTicks, doneTokens, doneQueues := make([]int64, len(done)), make([]int64, len(done)), make([]string, len(done))
	for i, b := range done {
		doneTicks[i], doneTokens[i], doneQueues[i] = b.TickID, b.Token, b.Queue
	}
	var at time.Time
	// One row whatever the flush returns: the server's clock as the
	// statement starts (the target list is computed in order: before the
	// flush reads it, to within the wait for the flush's lock), and the
	// fenced ticks.
	err = s.tx(ctx, scanOne(&at, &fenced), `SELECT clock_timestamp(), array(SELECT millrace.flush(p_owner => $1, p_seq => $2, p_job => $3, p_tick => $4, p_token => $5,
		p_state => $6, p_attempt => $7, p_error => $8, p_retry_at => $9, p_queue => $10, p_kind => $11,
		p_args => $12::jsonb[], p_priority => $13, p_max_attempts => $14, p_created_at => $15,
		p_timeout_ms => $16, p_started => $17, p_finished => $18, p_done_tick => $19,
		p_done_token => $20, p_done_queue => $21, p_replay => $22, p_key_queue => $23, p_key => $24, p_key_n => $25))`,
		owner, seq, jobIDs, ticks, tokens, states, attempts, errs, retryAt, queues, kinds, args, prios, maxAtt, createdAt,
		timeouts, started, finished, doneTicks, doneTokens, doneQueues, replay, keyQueues, keys, keyN)
	if err != nil {
		return nil, 0, err
	}
	var newest time.Time
	for _, f := range finished {
		if f != nil && f.After(newest) {
			newest = *f
		}
	}
	if !newest.IsZero() {
		shift = at.Sub(newest)
	}
	return fenced, shift, nil
}

// Complete writes the completion of job j of batch b inside tx (the
// worker's own transaction): its ack and history row commit with tx or not
// at all. It fails when the batch was released since or the job already
// has an outcome.
func Complete(ctx context.Context, tx Querier, owner int32, b *Batch, j *Job, started time.Time) error {
	rows, err := tx.Query(ctx, `SELECT millrace.complete(p_job => $1, p_tick => $2, p_token => $3,
		p_attempt => $4, p_queue => $5, p_kind => $6, p_args => NULL, p_priority => $7,
		p_max_attempts => $8, p_created_at => $9, p_started => $10, p_owner => $11)`,
		j.ID, b.TickID, b.Token, j.Attempt+1, j.Queue, j.Kind, j.Priority, j.MaxAttempts, j.CreatedAt, started, owner)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// JobState is where job id stands (millrace.job_state): "completed",
// "running", ..., or "" when it is unknown.
func (s *Store) JobState(ctx context.Context, id int64) (string, error) {
	var st *string
	if err := s.tx(ctx, scanOne(&st), "SELECT millrace.job_state($1)", id); err != nil || st == nil {
		return "", err
	}
	return *st, nil
}

// Cancelled returns those of ids that have a cancellation request.
func (s *Store) Cancelled(ctx context.Context, ids []int64) ([]int64, error) {
	var got []int64
	err := s.tx(ctx, func(rows pgx.Rows) error {
		var err error
		got, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	}, "SELECT millrace.cancelled($1)", ids)
	return got, err
}

// IsConnError reports whether err means the connection or server went away
// (as opposed to a statement the server rejected).
func IsConnError(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// An error that ends the session (FATAL: a terminated backend, an
		// idle_session_timeout or idle_in_transaction_session_timeout, an
		// admin or crash shutdown), or cannot connect now.
		return pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" ||
			strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
	}
	return true
}

// insertOn is Insert on a pool and InsertTx in a transaction; anything
// else (a connection, whose transaction state says nothing) is refused.
func insertOn(ctx context.Context, q Querier, jobs []NewJob, notify bool) ([]Inserted, error) {
	switch q := q.(type) {
	case *pgxpool.Pool:
		return Insert(ctx, q, jobs, notify)
	case pgx.Tx:
		return InsertTx(ctx, q, jobs, notify)
	}
	return nil, fmt.Errorf("storage: insert on a *pgxpool.Pool (its own transaction) or in a pgx.Tx, not on a %T", q)
}

// Enqueue inserts one job (see Insert and InsertTx: q is a pool or a
// transaction) and returns its id.
func (s *Store) Enqueue(ctx context.Context, q Querier, j NewJob, notify bool) (int64, error) {
	r, err := insertOn(ctx, q, []NewJob{j}, notify)
	if err != nil {
		return 0, err
	}
	return r[0].ID, nil
}

// EnqueueMany inserts jobs in one statement (see Insert and InsertTx: q is
// a pool or a transaction), with one NOTIFY per queue that got a job due
// now, and returns their ids in order.
func EnqueueMany(ctx context.Context, q Querier, jobs []NewJob) ([]int64, error) {
	r, err := insertOn(ctx, q, jobs, true)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(r))
	for i, x := range r {
		ids[i] = x.ID
	}
	return ids, nil
}
