package ui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
)

// keepActions is how many of the guard's dry-run actions the page lists.
const keepActions = 50

// horizon is the data of the horizon page: the guard's discovery, read at
// most once a second, and, given a policy, what the guard would do.
type horizon struct {
	pool    *pgxpool.Pool
	policy  *guard.Policy
	tracker *guard.Tracker
	dry     *guard.Guard // nil without a policy

	mu      sync.Mutex
	last    time.Time
	view    horizonView
	actions []actionView // newest first
}

func newHorizon(pool *pgxpool.Pool, p *guard.Policy) *horizon {
	h := &horizon{pool: pool, policy: p, tracker: guard.NewTracker()}
	if p != nil {
		h.dry = guard.New(pool, p, guard.Options{DryRun: true})
	}
	return h
}

// horizonView is the JSON the horizon page polls.
type horizonView struct {
	Taken   time.Time    `json:"taken"`
	Holders []holderView `json:"holders"`
	// Sessions in a transaction that hold no xmin (yet).
	Waiting    int          `json:"sessions_in_transaction_not_holding"`
	Tables     []tableView  `json:"tables"`
	Actions    []actionView `json:"actions"`
	Policy     bool         `json:"policy"`
	PolicyName string       `json:"policy_name,omitempty"`
	Errors     []string     `json:"errors,omitempty"`
}

type holderView struct {
	Source      string            `json:"source"`
	Node        string            `json:"node,omitempty"`
	PID         int               `json:"pid"`
	Describe    string            `json:"describe"`
	AgeS        float64           `json:"age_s"`
	XminAge     int64             `json:"xmin_age_xids"`
	Xmin        uint32            `json:"xmin"`
	State       string            `json:"state,omitempty"`
	IdleS       float64           `json:"idle_s,omitempty"`
	Application string            `json:"application_name,omitempty"`
	User        string            `json:"user,omitempty"`
	Database    string            `json:"database,omitempty"`
	Query       string            `json:"query,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Class       string            `json:"class"`
}

// tableView is a table's dead and live tuples; a partitioned table's are
// the sums over its partitions (Partitions of them).
type tableView struct {
	Name       string `json:"name"`
	Dead       int64  `json:"dead_tuples"`
	Live       int64  `json:"live_tuples"`
	Partitions int    `json:"partitions,omitempty"`
}

type actionView struct {
	At time.Time `json:"at"`
	// Seen is At as the dashboard shows every time (stamp).
	Seen   string `json:"seen"`
	Class  string `json:"class"`
	Source string `json:"source"`
	PID    int    `json:"pid,omitempty"`
	Target string `json:"target,omitempty"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	Action string `json:"action"`
	key    string
}

func (h *horizon) classOf(x *guard.Holder) string {
	if h.policy == nil {
		return ""
	}
	if x.Source != guard.SourceSession && !(x.Source == guard.SourceStandby && x.Node != "") {
		return ""
	}
	if c := h.policy.ClassOf(x); c != nil {
		return c.Name
	}
	return "(none)"
}

func (h *horizon) get(ctx context.Context) (horizonView, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.last) < 900*time.Millisecond {
		return h.view, nil
	}
	// The tables come from tables(), which sums partitions.
	snap, err := guard.Discover(ctx, h.pool, guard.DiscoverOptions{Tracker: h.tracker, TopTables: 1})
	if err != nil {
		return horizonView{}, err
	}
	var watch []string
	if h.policy != nil {
		watch = h.policy.WatchTables
	}
	tables, err := tables(ctx, h.pool, watch, 10)
	if err != nil {
		return horizonView{}, err
	}
	v := horizonView{Taken: snap.Taken, Holders: []holderView{}, Tables: []tableView{}, Policy: h.policy != nil}
	for i := range snap.Holders {
		x := &snap.Holders[i]
		q := redact(x.Query)
		if len(q) > 300 {
			q = strings.ToValidUTF8(q[:300], "") + "…"
		}
		v.Holders = append(v.Holders, holderView{
			Source: string(x.Source), Node: x.Node, PID: x.PID, Describe: redact(x.Describe()),
			AgeS: x.Age.Seconds(), XminAge: x.AgeXIDs, Xmin: x.Xmin, State: x.State, IdleS: x.IdleFor.Seconds(),
			Application: redact(x.ApplicationName), User: x.User, Database: x.Database, Query: q, Tags: x.Tags,
			Class: h.classOf(x),
		})
	}
	for _, s := range snap.Sessions {
		if !s.HoldsHorizon() {
			v.Waiting++
		}
	}
	v.Tables = append(v.Tables, tables...)
	if h.dry != nil {
		acts, err := h.dry.Step(ctx)
		if err != nil {
			v.Errors = append(v.Errors, "guard dry run: "+oneLine(err))
		}
		h.record(acts, snap.Taken)
	}
	v.Actions = append([]actionView{}, h.actions...)
	h.view, h.last = v, time.Now()
	return v, nil
}

// record keeps each distinct action once (a warning repeats at every poll
// while its holder lasts), newest first.
func (h *horizon) record(acts []guard.Action, at time.Time) {
	have := map[string]bool{}
	for _, a := range h.actions {
		have[a.key] = true
	}
	var fresh []actionView
	for _, a := range acts {
		key := fmt.Sprintf("%s/%s/%d/%d/%s/%s/%s/%s", a.Source, a.Node, a.PID, a.XactStart.UnixMicro(), a.Slot, a.GID, a.Rule, a.Kind)
		if have[key] {
			continue
		}
		have[key] = true
		target := a.Slot
		if a.GID != "" {
			target = a.GID
		}
		kind := string(a.Kind)
		if a.Kind != guard.ActionWarn {
			kind = "would " + kind
		}
		fresh = append(fresh, actionView{At: at, Seen: stamp(at), Class: a.Class, Source: string(a.Source), PID: a.PID, Target: target,
			Rule: a.Rule, Reason: a.Reason, Action: kind, key: key})
	}
	sort.SliceStable(fresh, func(i, j int) bool { return fresh[i].PID < fresh[j].PID })
	h.actions = append(fresh, h.actions...)
	if len(h.actions) > keepActions {
		h.actions = h.actions[:keepActions]
	}
}

// tablesSQL lists the tables with the most dead tuples, a partitioned
// table as one row summing its partitions (pg_stat_user_tables shows the
// parent with none: its rows are in its partitions).
const tablesSQL = `
WITH s AS (
    SELECT coalesce(pg_partition_root(st.relid), st.relid) AS root, st.relid, c.relkind, st.n_dead_tup, st.n_live_tup
    FROM pg_stat_user_tables st JOIN pg_class c ON c.oid = st.relid)
SELECT n.nspname || '.' || rc.relname, sum(s.n_dead_tup)::bigint, sum(s.n_live_tup)::bigint,
       count(*) FILTER (WHERE s.relid <> s.root AND s.relkind <> 'p')::int
FROM s JOIN pg_class rc ON rc.oid = s.root JOIN pg_namespace n ON n.oid = rc.relnamespace
GROUP BY 1 ORDER BY 2 DESC, 3 DESC, 1 LIMIT $1`

// watchedSQL reads the watched tables (schema.table), a partitioned one
// summing its partitions at every level.
const watchedSQL = `
SELECT w.name, coalesce(sum(st.n_dead_tup), 0)::bigint, coalesce(sum(st.n_live_tup), 0)::bigint,
       count(*) FILTER (WHERE t.relid <> r.oid AND c.relkind <> 'p')::int
FROM unnest($1::text[]) AS w(name)
CROSS JOIN LATERAL (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname || '.' || c.relname = w.name) r
CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(r.oid) UNION SELECT r.oid) t
JOIN pg_class c ON c.oid = t.relid
LEFT JOIN pg_stat_user_tables st ON st.relid = t.relid
GROUP BY w.name ORDER BY 2 DESC, 3 DESC, 1`

// tables reads the dead and live tuples of the watched tables (names as
// in a guard policy: schema.table, public without a schema), else of the
// top tables with the most.
func tables(ctx context.Context, pool *pgxpool.Pool, watch []string, top int) ([]tableView, error) {
	var rows pgx.Rows
	var err error
	if len(watch) > 0 {
		names := make([]string, len(watch))
		for i, n := range watch {
			if !strings.Contains(n, ".") {
				n = "public." + n
			}
			names[i] = n
		}
		rows, err = pool.Query(ctx, watchedSQL, names)
	} else {
		rows, err = pool.Query(ctx, tablesSQL, top)
	}
	if err != nil {
		return nil, fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tableView, error) {
		var t tableView
		err := r.Scan(&t.Name, &t.Dead, &t.Live, &t.Partitions)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("pg_stat_user_tables: %w", err)
	}
	return out, nil
}
