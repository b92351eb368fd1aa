package guard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/sqlcomment"
)

// ApplicationName is the application_name the guard connects with. Sessions
// carrying it are the guard's own and are never reported or acted on.
const ApplicationName = "millrace-guard"

// Source says what kind of thing holds the horizon back.
type Source string

// The sources of a held horizon.
const (
	SourceSession  Source = "session"  // a backend on the primary (backend_xmin or backend_xid)
	SourceStandby  Source = "standby"  // a standby's hot_standby_feedback (pg_stat_replication.backend_xmin), or a session on a standby
	SourceSlot     Source = "slot"     // a replication slot's xmin or catalog_xmin
	SourcePrepared Source = "prepared" // a prepared (two-phase) transaction
)

// Sources lists every Source, in report order.
var Sources = []Source{SourceSession, SourceStandby, SourceSlot, SourcePrepared}

// Querier is what Discover needs of a connection: *pgx.Conn, *pgxpool.Pool
// and *pgxpool.Conn all satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Holder is one thing that holds (or, for a session merely in a
// transaction, may come to hold) the xmin horizon back.
type Holder struct {
	Source Source
	// Node is "" on the primary; for sessions found on a standby through a
	// direct connection it names the standby (its Standby.Name).
	Node string
	// PID is the backend's process id (for a standby: the walsender's pid
	// on the primary; for a slot: the active pid, 0 if inactive).
	PID int
	// Xmin is the oldest transaction id held: for a session the older of
	// backend_xmin and backend_xid; for a slot xmin, else catalog_xmin.
	// Zero when nothing is held.
	Xmin uint32
	// AgeXIDs is the age of Xmin in transactions (age() on its node).
	AgeXIDs int64
	// Age is how long the horizon has been held: for a session since
	// xact_start; for a standby the age of the standby session that holds
	// it when known, else since the guard first saw this xmin; for a slot
	// since the guard first saw its xmin; for a prepared transaction since
	// it was prepared.
	Age time.Duration

	// Session fields (Source session, and standby-side sessions).
	BackendXmin, BackendXID uint32
	State, BackendType      string
	XactStart, StateChange  time.Time
	// IdleFor is how long the session has been in its current state.
	IdleFor         time.Duration
	ApplicationName string
	User, Database  string
	ClientAddr      string
	Query           string
	// Tags are the SQLCommenter tags parsed from Query.
	Tags map[string]string

	// StandbySession is, for a standby holder, the session on that standby
	// whose snapshot holds the feedback xmin (nil when no direct connection
	// to the standby found it).
	StandbySession *Holder

	// Slot fields.
	Slot, SlotType     string
	Active             bool
	CatalogXmin        uint32
	CatalogXminAgeXIDs int64

	// Prepared transaction fields (User is the owner, Database its database).
	GID      string
	Prepared time.Time
}

// HoldsHorizon reports whether the holder holds an xmin.
func (h *Holder) HoldsHorizon() bool { return h.Xmin != 0 }

// InTransaction reports whether a session has an open transaction.
func (h *Holder) InTransaction() bool { return !h.XactStart.IsZero() }

// IdleInTransaction reports whether a session sits idle inside a
// transaction (aborted or not).
func (h *Holder) IdleInTransaction() bool { return strings.HasPrefix(h.State, "idle in transaction") }

// Describe is a short human description, e.g. "session pid 4242 idle in
// transaction, app=psql user=alice".
func (h *Holder) Describe() string {
	switch h.Source {
	case SourceSlot:
		state := "inactive"
		if h.Active {
			state = fmt.Sprintf("active pid %d", h.PID)
		}
		kind := "xmin"
		if h.Xmin == h.CatalogXmin && h.CatalogXmin != 0 {
			kind = "catalog_xmin"
		}
		return fmt.Sprintf("%s slot %q %s, %s %d", h.SlotType, h.Slot, state, kind, h.Xmin)
	case SourcePrepared:
		return fmt.Sprintf("prepared transaction %q, owner=%s db=%s", h.GID, h.User, h.Database)
	case SourceStandby:
		if h.Node == "" {
			s := fmt.Sprintf("standby %s", firstNonEmpty(h.ApplicationName, h.ClientAddr, fmt.Sprint("walsender pid ", h.PID)))
			if h.ClientAddr != "" && h.ApplicationName != "" {
				s += " (" + h.ClientAddr + ")"
			}
			if h.StandbySession != nil {
				s += ", held by " + h.StandbySession.Describe()
			}
			return s
		}
	}
	where := ""
	if h.Node != "" {
		where = " on standby " + h.Node
	}
	parts := []string{}
	if h.ApplicationName != "" {
		parts = append(parts, "app="+h.ApplicationName)
	}
	if h.User != "" {
		parts = append(parts, "user="+h.User)
	}
	if h.Database != "" {
		parts = append(parts, "db="+h.Database)
	}
	return fmt.Sprintf("session pid %d%s %s, %s", h.PID, where, firstNonEmpty(h.State, "unknown state"), strings.Join(parts, " "))
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Table is a table's dead tuple count.
type Table struct {
	Name      string // schema.table
	DeadTuple int64
	LiveTuple int64
}

// Snapshot is one discovery pass.
type Snapshot struct {
	Taken time.Time
	// Holders holds every holder of the horizon found on the primary:
	// sessions with backend_xmin or backend_xid, standbys with a feedback
	// xmin, slots with xmin or catalog_xmin, prepared transactions. Sorted
	// oldest (largest AgeXIDs) first.
	Holders []Holder
	// Sessions are all sessions on the primary with an open transaction
	// (holding an xmin or not), other than the guard's own and replication
	// or maintenance processes: what the policy is applied to.
	Sessions []Holder
	// StandbySessions are the sessions with an open transaction on the
	// standbys the guard connects to directly (Node names the standby).
	StandbySessions []Holder
	// Tables are the watched tables, or the hottest by n_dead_tup, in the
	// guard's database.
	Tables []Table
	// StandbyErrors records standbys that could not be queried; discovery
	// on the primary is still complete.
	StandbyErrors map[string]error
}

// Oldest returns the holder of the given source with the oldest xmin, or
// nil when there is none.
func (s *Snapshot) Oldest(src Source) *Holder {
	var best *Holder
	for i := range s.Holders {
		h := &s.Holders[i]
		if h.Source == src && (best == nil || h.AgeXIDs > best.AgeXIDs) {
			best = h
		}
	}
	return best
}

// OldestOverall returns the holder with the oldest xmin of any source, or
// nil when nothing holds the horizon.
func (s *Snapshot) OldestOverall() *Holder {
	if len(s.Holders) == 0 {
		return nil
	}
	return &s.Holders[0]
}

// DeadTuples is the sum of n_dead_tup over Tables.
func (s *Snapshot) DeadTuples() int64 {
	var n int64
	for _, t := range s.Tables {
		n += t.DeadTuple
	}
	return n
}

// StandbyConn is a direct connection to a standby.
type StandbyConn struct {
	// Name identifies the standby in reports (host:port, or its
	// application_name on the primary, which also helps to pair it with
	// its pg_stat_replication row).
	Name string
	DB   Querier
}

// DiscoverOptions tune Discover.
type DiscoverOptions struct {
	// Standbys are direct connections to standbys, to find the sessions
	// there that hold the feedback xmin.
	Standbys []StandbyConn
	// Tracker remembers when each standby or slot xmin was first seen, so
	// that their age in seconds can be reported. Nil: ages of standbys
	// without a known session and of slots are zero.
	Tracker *Tracker
	// WatchTables are schema-qualified tables whose dead tuples to report;
	// empty: the TopTables tables with the most dead tuples.
	WatchTables []string
	// TopTables is how many of the hottest tables to report (default 5).
	TopTables int
	// ExcludeApplicationName is left out of every report (default
	// ApplicationName, the guard's own connections).
	ExcludeApplicationName string
}

// Tracker remembers when an xmin was first seen across discovery passes.
// It is safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex
	seen map[string]time.Time
	used map[string]bool
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{seen: map[string]time.Time{}, used: map[string]bool{}}
}

// FirstSeen returns when key was first seen, recording now if never seen.
func (t *Tracker) FirstSeen(key string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.used[key] = true
	if at, ok := t.seen[key]; ok {
		return at
	}
	t.seen[key] = now
	return now
}

// Sweep forgets keys not asked for since the previous Sweep.
func (t *Tracker) Sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.seen {
		if !t.used[k] {
			delete(t.seen, k)
		}
	}
	t.used = map[string]bool{}
}

const sessionsSQL = `
SELECT pid, coalesce(datname, ''), coalesce(usename, ''), coalesce(application_name, ''),
       coalesce(host(client_addr), ''), coalesce(backend_type, ''), coalesce(state, ''),
       xact_start, state_change,
       coalesce(backend_xmin::text::bigint, 0), coalesce(backend_xid::text::bigint, 0),
       coalesce(age(backend_xmin), -1), coalesce(age(backend_xid), -1),
       coalesce(query, ''),
       coalesce(extract(epoch FROM clock_timestamp() - xact_start), 0)::float8,
       coalesce(extract(epoch FROM clock_timestamp() - state_change), 0)::float8
FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
  AND coalesce(application_name, '') <> $1
  AND coalesce(backend_type, '') NOT IN ('walsender', 'autovacuum worker', 'autovacuum launcher', 'parallel worker')
  AND (xact_start IS NOT NULL OR backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)`

func querySessions(ctx context.Context, db Querier, exclude, node string) ([]Holder, error) {
	rows, err := db.Query(ctx, sessionsSQL, exclude)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_activity: %w", err)
	}
	defer rows.Close()
	var out []Holder
	for rows.Next() {
		var h Holder
		var xactStart, stateChange *time.Time
		var xmin, xid, xminAge, xidAge int64
		var ageS, idleS float64
		if err := rows.Scan(&h.PID, &h.Database, &h.User, &h.ApplicationName, &h.ClientAddr, &h.BackendType, &h.State,
			&xactStart, &stateChange, &xmin, &xid, &xminAge, &xidAge, &h.Query, &ageS, &idleS); err != nil {
			return nil, fmt.Errorf("pg_stat_activity: %w", err)
		}
		h.Source = SourceSession
		if node != "" {
			h.Source = SourceStandby
		}
		h.Node = node
		if xactStart != nil {
			h.XactStart = *xactStart
		}
		if stateChange != nil {
			h.StateChange = *stateChange
		}
		h.BackendXmin, h.BackendXID = uint32(xmin), uint32(xid)
		switch {
		case xminAge >= xidAge && xminAge >= 0:
			h.Xmin, h.AgeXIDs = uint32(xmin), xminAge
		case xidAge >= 0:
			h.Xmin, h.AgeXIDs = uint32(xid), xidAge
		}
		h.Age = seconds(ageS)
		h.IdleFor = seconds(idleS)
		h.Tags = sqlcomment.Parse(h.Query)
		out = append(out, h)
	}
	return out, rows.Err()
}

func seconds(s float64) time.Duration {
	if s < 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// Discover finds every holder of the horizon on the primary db (and, given
// direct standby connections, the sessions on the standbys that hold their
// feedback xmin), and the dead tuples on the hottest or watched tables.
func Discover(ctx context.Context, db Querier, opts DiscoverOptions) (*Snapshot, error) {
	exclude := opts.ExcludeApplicationName
	if exclude == "" {
		exclude = ApplicationName
	}
	top := opts.TopTables
	if top <= 0 {
		top = 5
	}
	var now time.Time
	if err := db.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return nil, err
	}
	snap := &Snapshot{Taken: now}

	sessions, err := querySessions(ctx, db, exclude, "")
	if err != nil {
		return nil, err
	}
	snap.Sessions = sessions
	for _, s := range sessions {
		if s.HoldsHorizon() {
			snap.Holders = append(snap.Holders, s)
		}
	}

	// Sessions on standbys, by standby.
	byNode := map[string][]Holder{}
	for _, sb := range opts.Standbys {
		ss, err := querySessions(ctx, sb.DB, exclude, sb.Name)
		if err != nil {
			if snap.StandbyErrors == nil {
				snap.StandbyErrors = map[string]error{}
			}
			snap.StandbyErrors[sb.Name] = err
			continue
		}
		byNode[sb.Name] = ss
		snap.StandbySessions = append(snap.StandbySessions, ss...)
	}

	// Standbys through pg_stat_replication.
	rows, err := db.Query(ctx, `
SELECT pid, coalesce(application_name, ''), coalesce(host(client_addr), ''), coalesce(state, ''),
       backend_xmin::text::bigint, age(backend_xmin)
FROM pg_stat_replication WHERE backend_xmin IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_replication: %w", err)
	}
	var standbys []Holder
	for rows.Next() {
		h := Holder{Source: SourceStandby}
		var xmin int64
		if err := rows.Scan(&h.PID, &h.ApplicationName, &h.ClientAddr, &h.State, &xmin, &h.AgeXIDs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pg_stat_replication: %w", err)
		}
		h.Xmin = uint32(xmin)
		standbys = append(standbys, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pg_stat_replication: %w", err)
	}
	linkStandbys(standbys, opts.Standbys, byNode)
	for i := range standbys {
		h := &standbys[i]
		if ss := h.StandbySession; ss != nil && !ss.XactStart.IsZero() {
			h.Age = ss.Age
		} else if opts.Tracker != nil {
			key := fmt.Sprintf("standby/%s/%s/%d", h.ApplicationName, h.ClientAddr, h.Xmin)
			h.Age = now.Sub(opts.Tracker.FirstSeen(key, now))
		}
		snap.Holders = append(snap.Holders, *h)
	}

	// Replication slots.
	rows, err = db.Query(ctx, `
SELECT slot_name::text, coalesce(slot_type, ''), active, coalesce(active_pid, 0),
       coalesce(xmin::text::bigint, 0), coalesce(catalog_xmin::text::bigint, 0),
       coalesce(age(xmin), -1), coalesce(age(catalog_xmin), -1), coalesce(database::text, '')
FROM pg_replication_slots WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("pg_replication_slots: %w", err)
	}
	for rows.Next() {
		h := Holder{Source: SourceSlot}
		var xmin, cxmin, xminAge, cxminAge int64
		if err := rows.Scan(&h.Slot, &h.SlotType, &h.Active, &h.PID, &xmin, &cxmin, &xminAge, &cxminAge, &h.Database); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pg_replication_slots: %w", err)
		}
		h.CatalogXmin, h.CatalogXminAgeXIDs = uint32(cxmin), cxminAge
		if xmin != 0 {
			h.Xmin, h.AgeXIDs = uint32(xmin), xminAge
		} else {
			h.Xmin, h.AgeXIDs = uint32(cxmin), cxminAge
		}
		if opts.Tracker != nil {
			h.Age = now.Sub(opts.Tracker.FirstSeen(fmt.Sprintf("slot/%s/%d", h.Slot, h.Xmin), now))
		}
		snap.Holders = append(snap.Holders, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pg_replication_slots: %w", err)
	}

	// Prepared transactions.
	rows, err = db.Query(ctx, `
SELECT gid, transaction::text::bigint, age(transaction), prepared, coalesce(owner::text, ''), coalesce(database::text, ''),
       extract(epoch FROM clock_timestamp() - prepared)::float8
FROM pg_prepared_xacts`)
	if err != nil {
		return nil, fmt.Errorf("pg_prepared_xacts: %w", err)
	}
	for rows.Next() {
		h := Holder{Source: SourcePrepared}
		var xid int64
		var ageS float64
		if err := rows.Scan(&h.GID, &xid, &h.AgeXIDs, &h.Prepared, &h.User, &h.Database, &ageS); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pg_prepared_xacts: %w", err)
		}
		h.Xmin = uint32(xid)
		h.Age = seconds(ageS)
		snap.Holders = append(snap.Holders, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pg_prepared_xacts: %w", err)
	}
	if opts.Tracker != nil {
		opts.Tracker.Sweep()
	}
	sort.SliceStable(snap.Holders, func(i, j int) bool { return snap.Holders[i].AgeXIDs > snap.Holders[j].AgeXIDs })

	// Cost: dead tuples on the watched or hottest tables.
	var trows pgx.Rows
	if len(opts.WatchTables) > 0 {
		names := make([]string, len(opts.WatchTables))
		for i, n := range opts.WatchTables {
			if !strings.Contains(n, ".") {
				n = "public." + n
			}
			names[i] = n
		}
		trows, err = db.Query(ctx, `
SELECT schemaname || '.' || relname, n_dead_tup, n_live_tup FROM pg_stat_user_tables
WHERE schemaname || '.' || relname = ANY($1) ORDER BY n_dead_tup DESC`, names)
	} else {
		trows, err = db.Query(ctx, `
SELECT schemaname || '.' || relname, n_dead_tup, n_live_tup FROM pg_stat_user_tables
ORDER BY n_dead_tup DESC, relid LIMIT $1`, top)
	}
	if err != nil {
		return nil, fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	for trows.Next() {
		var t Table
		if err := trows.Scan(&t.Name, &t.DeadTuple, &t.LiveTuple); err != nil {
			trows.Close()
			return nil, fmt.Errorf("pg_stat_user_tables: %w", err)
		}
		snap.Tables = append(snap.Tables, t)
	}
	trows.Close()
	if err := trows.Err(); err != nil {
		return nil, fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	return snap, nil
}

// linkStandbys pairs pg_stat_replication rows with the standbys the guard
// connects to directly and records, for each, the standby session with the
// oldest snapshot. A row pairs with a standby by name (its
// application_name or client address equals StandbyConn.Name), else when
// there is exactly one of each, else when the standby's oldest session
// xmin equals the row's feedback xmin.
func linkStandbys(rows []Holder, conns []StandbyConn, byNode map[string][]Holder) {
	oldest := func(node string) *Holder {
		var best *Holder
		ss := byNode[node]
		for i := range ss {
			if ss[i].HoldsHorizon() && (best == nil || ss[i].AgeXIDs > best.AgeXIDs) {
				best = &ss[i]
			}
		}
		return best
	}
	used := map[string]bool{}
	for i := range rows {
		r := &rows[i]
		for _, c := range conns {
			if !used[c.Name] && (c.Name == r.ApplicationName || c.Name == r.ClientAddr) {
				used[c.Name] = true
				r.StandbySession = oldest(c.Name)
				break
			}
		}
	}
	if len(rows) == 1 && len(conns) == 1 && rows[0].StandbySession == nil && !used[conns[0].Name] {
		rows[0].StandbySession = oldest(conns[0].Name)
		return
	}
	for i := range rows {
		r := &rows[i]
		if r.StandbySession != nil {
			continue
		}
		for _, c := range conns {
			if used[c.Name] {
				continue
			}
			if o := oldest(c.Name); o != nil && o.BackendXmin == r.Xmin {
				used[c.Name] = true
				r.StandbySession = o
				break
			}
		}
	}
}
