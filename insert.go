package millrace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/maint"
	"github.com/millrace/millrace/internal/storage"
)

// InsertOpts are per-job options; nil means defaults. A JobArgs type may
// give its kind's defaults by implementing InsertOptser; options given to
// Insert win field by field.
type InsertOpts struct {
	Queue       string    // default "default"
	Priority    int       // 0..32767, lower runs first (see Config.StarveAfter); default 0
	RunAt       time.Time // zero: now; else in years 1 to 9999 (UTC)
	MaxAttempts int       // default: the kind's KindOpts.MaxAttempts, else Config.MaxAttempts
	// Timeout cancels the job's context after this long (0: the kind's
	// KindOpts.Timeout).
	Timeout time.Duration
	// Unique, when set, makes the job unique: it is not inserted while a
	// job with the same unique key still blocks it, and Insert returns
	// that job with Duplicate set.
	Unique *UniqueOpts
}

// InsertOptser is implemented by JobArgs types that carry their kind's
// default insert options.
type InsertOptser interface {
	InsertOpts() InsertOpts
}

// UniqueOpts says what makes two jobs of a kind the same. The key is made
// of the kind and each dimension enabled. A job blocks a new one with the
// same key while it is not finished (available, scheduled, running, or
// waiting for a retry), and after it finished in one of ByState. The
// guarantee holds across processes and concurrent inserts: inserts of one
// key are serialized by a lock held to the end of the inserting
// transaction. Unique inserts need READ COMMITTED.
type UniqueOpts struct {
	// ByArgs includes the job's encoded arguments in the key; ArgKeys, if
	// set, only those top-level keys of them. Arguments are compared as
	// JSON values: object key order, spacing and the spelling of a number
	// (1.0, 1, 1e0) do not matter, and numbers are exact (two 64-bit
	// integers that a float64 cannot tell apart are two keys).
	ByArgs  bool
	ArgKeys []string
	// ByPeriod includes the period the job is inserted in (time truncated
	// to ByPeriod, in UTC): a job blocks only inside its period.
	ByPeriod time.Duration
	// ByQueue includes the queue.
	ByQueue bool
	// ByState lists the finished states that keep blocking, among
	// JobCompleted, JobDiscarded and JobCancelled (unfinished jobs always
	// block). Completed jobs block only while history keeps them.
	ByState []JobState
}

// InsertResult is a job as Insert left it.
type InsertResult struct {
	ID    int64
	Queue string
	Kind  string
	// State is JobAvailable or JobScheduled for a new job; for a duplicate,
	// the state of the job that blocked it.
	State JobState
	// ScheduledAt is when the job is due (now for an available job). For
	// a duplicate it is the blocking job's: when it is due
	// (scheduled), when it became ready to run (available, running: its
	// Job.ReadyAt), or when its last attempt started (completed,
	// discarded, cancelled: the Started of its last AttemptInfo, which is
	// when it finished for a job cancelled before it ran).
	ScheduledAt time.Time
	// Duplicate says a unique job with the same key blocked this insert:
	// nothing was inserted, and ID, State and ScheduledAt are that job's.
	Duplicate bool
}

// InsertParams is one job about to be inserted, as InsertMiddleware sees
// it: its kind, its encoded arguments and its options, all of which a
// middleware may change.
type InsertParams struct {
	Kind string
	Args json.RawMessage
	Opts InsertOpts
}

// InsertMiddleware wraps an insert of one or more jobs: call next to
// insert them (after changing them if need be).
type InsertMiddleware func(ctx context.Context, jobs []*InsertParams, next func(ctx context.Context) ([]InsertResult, error)) ([]InsertResult, error)

// InsertManyParams is one job of an InsertMany call.
type InsertManyParams struct {
	Args JobArgs
	Opts *InsertOpts
}

// params resolves a job's options: the kind's defaults, then opts.
func (c *Client) params(args JobArgs, opts *InsertOpts) (*InsertParams, error) {
	if args == nil {
		return nil, errors.New("millrace: insert of nil args")
	}
	p := &InsertParams{Kind: args.Kind()}
	if d, ok := args.(InsertOptser); ok {
		p.Opts = d.InsertOpts()
	}
	if p.Opts.MaxAttempts == 0 && c.cfg.Workers != nil {
		p.Opts.MaxAttempts = c.cfg.Workers.byKind[p.Kind].opts.MaxAttempts
	}
	if opts != nil {
		o := *opts
		if o.Queue != "" {
			p.Opts.Queue = o.Queue
		}
		if o.Priority != 0 {
			p.Opts.Priority = o.Priority
		}
		if !o.RunAt.IsZero() {
			p.Opts.RunAt = o.RunAt
		}
		if o.MaxAttempts != 0 {
			p.Opts.MaxAttempts = o.MaxAttempts
		}
		if o.Timeout != 0 {
			p.Opts.Timeout = o.Timeout
		}
		if o.Unique != nil {
			p.Opts.Unique = o.Unique
		}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("millrace: encoding args of kind %s: %w", p.Kind, err)
	}
	p.Args = b
	return p, nil
}

// newJob checks a job against the input rules (millrace.check_job's, in
// the same order and with the same messages) and makes the stored form.
func (c *Client) newJob(p *InsertParams, now time.Time) (storage.NewJob, error) {
	o := p.Opts
	j := storage.NewJob{Queue: o.Queue, Kind: p.Kind, MaxAttempts: o.MaxAttempts, RunAt: o.RunAt, Timeout: o.Timeout}
	if j.Queue == "" {
		j.Queue = DefaultQueue
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = c.cfg.MaxAttempts
	}
	if j.Kind == "" || len(j.Kind) > 255 {
		return j, errors.New("millrace: kind must be 1 to 255 bytes")
	}
	if len(j.Queue) > 128 {
		return j, errors.New("millrace: queue must be 1 to 128 bytes")
	}
	if p.Args == nil || !json.Valid(p.Args) {
		return j, errors.New("millrace: args must be valid JSON")
	}
	if len(p.Args) > c.cfg.MaxArgsBytes {
		return j, fmt.Errorf("%w: kind %s is %d bytes encoded, the limit is %d", ErrArgsTooLarge, j.Kind, len(p.Args), c.cfg.MaxArgsBytes)
	}
	j.Args = p.Args
	if o.Priority < 0 || o.Priority > 32767 {
		return j, errors.New("millrace: priority must be 0 to 32767")
	}
	j.Priority = int16(o.Priority)
	if j.MaxAttempts < 1 || j.MaxAttempts > 1000 {
		return j, errors.New("millrace: max_attempts must be 1 to 1000")
	}
	if o.Timeout < 0 || o.Timeout > 24*time.Hour*24 {
		return j, errors.New("millrace: timeout must be 0 to 24 days")
	}
	if y := o.RunAt.UTC().Year(); !o.RunAt.IsZero() && (y < 1 || y > 9999) {
		return j, errors.New("millrace: run_at must be a finite time in years 1 to 9999 (UTC)")
	}
	if o.Unique != nil {
		key, states, until, err := uniqueKey(j, o.Unique, now)
		if err != nil {
			return j, err
		}
		j.UniqueKey, j.UniqueStates, j.UniqueUntil = key, states, until
	}
	return j, nil
}

// uniqueKey makes a job's unique key, the finished states that keep
// blocking (bits), and the end of its period.
func uniqueKey(j storage.NewJob, u *UniqueOpts, now time.Time) (string, int, time.Time, error) {
	h := sha256.New()
	h.Write([]byte(j.Kind))
	h.Write([]byte{0})
	if u.ByQueue {
		h.Write([]byte(j.Queue))
	}
	h.Write([]byte{0})
	if u.ByArgs {
		var canon []byte
		var err error
		if len(u.ArgKeys) > 0 {
			var m map[string]json.RawMessage
			if err = json.Unmarshal(j.Args, &m); err != nil {
				return "", 0, time.Time{}, fmt.Errorf("millrace: unique by arg keys needs object args: %w", err)
			}
			keys := slices.Clone(u.ArgKeys)
			slices.Sort(keys)
			keys = slices.Compact(keys)
			sub := []byte{'{'}
			for _, k := range keys {
				v, ok := m[k]
				if !ok {
					continue
				}
				c, err := canonicalJSON(v)
				if err != nil {
					return "", 0, time.Time{}, fmt.Errorf("millrace: unique args: %w", err)
				}
				if len(sub) > 1 {
					sub = append(sub, ',')
				}
				name, _ := json.Marshal(k)
				sub = append(append(append(sub, name...), ':'), c...)
			}
			canon = append(sub, '}')
		} else {
			canon, err = canonicalJSON(j.Args) // object keys sorted, numbers exact: one encoding per value
		}
		if err != nil {
			return "", 0, time.Time{}, fmt.Errorf("millrace: unique args: %w", err)
		}
		h.Write(canon)
	}
	h.Write([]byte{0})
	var until time.Time
	if u.ByPeriod < 0 {
		return "", 0, time.Time{}, errors.New("millrace: unique period must not be negative")
	}
	if u.ByPeriod > 0 {
		at := now
		if !j.RunAt.IsZero() {
			at = j.RunAt
		}
		start := at.UTC().Truncate(u.ByPeriod)
		until = start.Add(u.ByPeriod)
		fmt.Fprintf(h, "%d", start.UnixNano())
	}
	states := 0
	for _, s := range u.ByState {
		switch s {
		case JobCompleted:
			states |= 2
		case JobDiscarded:
			states |= 4
		case JobCancelled:
			states |= 8
		case JobAvailable, JobRunning, JobScheduled:
			// unfinished jobs always block
		default:
			return "", 0, time.Time{}, fmt.Errorf("millrace: unique ByState: unknown state %q", s)
		}
	}
	return j.Kind + ":" + hex.EncodeToString(h.Sum(nil)[:16]), states, until, nil
}

// Insert enqueues one job in its own transaction and returns it (for a
// duplicate of a unique job, the job that blocked it). Idle workers of the
// queue are woken by a notification coalesced with others sent from this
// process within a couple of milliseconds. On a hot standby it, like
// every insert, returns ErrStandby.
func (c *Client) Insert(ctx context.Context, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	p, err := c.params(args, opts)
	if err != nil {
		return nil, err
	}
	res, err := c.insert(ctx, nil, []*InsertParams{p})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertTx enqueues one job inside the caller's transaction: it runs only if
// tx commits. Postgres delivers one NOTIFY per queue when tx commits.
func (c *Client) InsertTx(ctx context.Context, tx pgx.Tx, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	p, err := c.params(args, opts)
	if err != nil {
		return nil, err
	}
	res, err := c.insert(ctx, tx, []*InsertParams{p})
	if err != nil {
		return nil, err
	}
	return &res[0], nil
}

// InsertMany enqueues jobs in one statement, in one transaction, and
// returns them in order. Either all are inserted or none (duplicates of
// unique jobs are not inserted and come back with Duplicate set).
func (c *Client) InsertMany(ctx context.Context, jobs []InsertManyParams) ([]InsertResult, error) {
	var res []InsertResult
	// READ COMMITTED whatever the database's default: unique keys need it.
	err := pgx.BeginTxFunc(ctx, c.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var err error
		res, err = c.InsertManyTx(ctx, tx, jobs)
		return err
	})
	return res, err
}

// InsertManyTx is InsertMany inside the caller's transaction.
func (c *Client) InsertManyTx(ctx context.Context, tx pgx.Tx, jobs []InsertManyParams) ([]InsertResult, error) {
	ps := make([]*InsertParams, len(jobs))
	for i, j := range jobs {
		p, err := c.params(j.Args, j.Opts)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		ps[i] = p
	}
	return c.insert(ctx, tx, ps)
}

// insert runs the insert middleware around the insert itself: in the
// caller's transaction tx, or in its own on the client's pool (tx nil).
func (c *Client) insert(ctx context.Context, tx pgx.Tx, ps []*InsertParams) ([]InsertResult, error) {
	next := func(ctx context.Context) ([]InsertResult, error) { return c.insertNow(ctx, tx, ps) }
	for i := len(c.cfg.InsertMiddleware) - 1; i >= 0; i-- {
		mw, inner := c.cfg.InsertMiddleware[i], next
		next = func(ctx context.Context) ([]InsertResult, error) { return mw(ctx, ps, inner) }
	}
	return next(ctx)
}

func (c *Client) insertNow(ctx context.Context, tx pgx.Tx, ps []*InsertParams) ([]InsertResult, error) {
	inTx := tx != nil
	var q storage.Querier = c.db
	if inTx {
		q = tx
	}
	// A unique period is decided on the server's clock: a producer whose
	// clock is behind or ahead must not open a period of its own. One
	// round trip, only when a job needs it.
	var now time.Time
	for _, p := range ps {
		if o := p.Opts; o.Unique != nil && o.Unique.ByPeriod > 0 && o.RunAt.IsZero() {
			var err error
			if now, err = storage.Clock(ctx, q); err != nil {
				return nil, fmt.Errorf("millrace: reading the server's clock for a unique period: %w", err)
			}
			break
		}
	}
	nj := make([]storage.NewJob, len(ps))
	for i, p := range ps {
		j, err := c.newJob(p, now)
		if err != nil {
			if len(ps) > 1 {
				return nil, fmt.Errorf("job %d: %w", i, err)
			}
			return nil, err
		}
		nj[i] = j
	}
	// In a transaction Postgres notifies at commit; outside one, immediate
	// jobs are announced by the coalescing sender (one NOTIFY per queue
	// per few milliseconds). Scheduled jobs need none: the leader polls
	// the schedule.
	var ins []storage.Inserted
	var err error
	if inTx {
		ins, err = storage.InsertTx(ctx, tx, nj, true)
	} else {
		ins, err = storage.Insert(ctx, c.db, nj, false)
	}
	if err != nil {
		return nil, c.onStandby(ctx, q, err)
	}
	res := make([]InsertResult, len(ins))
	for i, r := range ins {
		res[i] = InsertResult{ID: r.ID, Queue: nj[i].Queue, Kind: nj[i].Kind, ScheduledAt: r.RunAt, Duplicate: r.Duplicate,
			State: JobAvailable}
		if r.Scheduled {
			res[i].State = JobScheduled
		}
		if r.Duplicate && r.State != "" {
			res[i].State = JobState(r.State) // read by insert_many under the key's lock
		}
	}
	if !inTx {
		for i, j := range nj {
			switch {
			case ins[i].Duplicate:
			case !ins[i].Scheduled:
				c.notify(j.Queue)
			case time.Until(ins[i].RunAt) < maint.PromoterWait:
				// Due before the leader's promoter would look again.
				c.sender.NotifySchedAt(ins[i].RunAt)
			}
		}
	}
	return res, nil
}
