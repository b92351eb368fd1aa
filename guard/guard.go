// Package guard watches everything that holds back PostgreSQL's MVCC
// horizon (sessions, standbys through hot_standby_feedback, replication
// slots and prepared transactions) and enforces a per-workload-class
// policy: maximum transaction age, maximum time idle in a transaction,
// maximum concurrent members, and a horizon window (the class may not hold
// the horizon without a break for longer than T while its members overlap).
//
// The guard runs as a daemon (millrace guard watch), as a one-shot check
// for monitoring systems (millrace guard check), or embedded in an
// application:
//
//	p, err := guard.LoadPolicy("policy.yaml")
//	...
//	g := guard.New(pool, p, guard.Options{Logger: slog.Default()})
//	go g.Run(ctx)
//
// Sessions that match no class of the policy are never touched.
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/cmdline"
	"github.com/millrace/millrace/internal/testsignal"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Guard.
type Options struct {
	// DryRun logs and returns what the guard would do without doing it.
	DryRun bool
	// Logger receives every action (nil: discard).
	Logger *slog.Logger
	// StandbyURLs are connection strings of standbys to connect to
	// directly, to find (and, if they match a class, act on) the sessions
	// there that hold the primary's horizon through hot_standby_feedback.
	StandbyURLs []string
	// Registerer, if set, receives the guard's Prometheus metrics.
	Registerer prometheus.Registerer
	// Thresholds for Check (zero fields take their defaults).
	Thresholds Thresholds
}

// Thresholds grade the oldest holder of the horizon for Check. A zero
// field takes its default; a negative one disables that test.
type Thresholds struct {
	WarnAge  time.Duration // default 5m
	CritAge  time.Duration // default 30m
	WarnXIDs int64         // default 10,000,000
	CritXIDs int64         // default 100,000,000
}

func (t Thresholds) withDefaults() Thresholds {
	if t.WarnAge == 0 {
		t.WarnAge = 5 * time.Minute
	}
	if t.CritAge == 0 {
		t.CritAge = 30 * time.Minute
	}
	if t.WarnXIDs == 0 {
		t.WarnXIDs = 10_000_000
	}
	if t.CritXIDs == 0 {
		t.CritXIDs = 100_000_000
	}
	return t
}

// Action is one thing the guard did, or in dry-run would have done, or
// warned about.
type Action struct {
	// Class is the workload class of the session, or "slots" / "prepared".
	Class  string
	Source Source
	// Node is "" for the primary, else the standby's name.
	Node string
	PID  int
	// Slot, GID and Database identify a slot or prepared transaction.
	Slot, GID, Database string
	// Rule is the policy key that was broken: max_transaction_age,
	// max_idle_in_transaction, max_concurrent, horizon_window,
	// slot_max_age or prepared_max_age.
	Rule   string
	Reason string
	// Kind is what was (or would be) done; Configured is what the class
	// asked for (they differ when cancel escalates to terminate for a
	// session idle in a transaction, or when an opt-in is off).
	Kind, Configured ActionKind
	Age              time.Duration
	XminAge          int64
	// XactStart is the session's transaction start: the guard signals the
	// session only while it is still in that transaction.
	XactStart time.Time
	DryRun    bool
	// Done reports that the signal was delivered, the slot dropped or the
	// prepared transaction rolled back.
	Done bool
	Err  error
}

// Guard watches and enforces a Policy on one primary and its standbys.
type Guard struct {
	pool   *pgxpool.Pool
	policy *Policy
	// ownPolicy: New was given the policy (Check applies its rules).
	ownPolicy bool
	opts      Options
	log       *slog.Logger
	tracker   *Tracker
	metrics   *metrics

	mu       sync.Mutex // one Step at a time
	standbys []*standby
	classes  map[string]*classState
	logged   map[string]bool // warn and dry-run actions already logged

	// pollDone fires after each poll of Run with its error (tests only).
	pollDone testsignal.Signal[error]
}

type standby struct {
	name string
	url  string
	pool *pgxpool.Pool
}

type classState struct {
	holdingSince time.Time // zero: no member held the horizon at the last poll
	// xids are the transaction ids the guard has seen members of the class
	// hold (backend_xid), each with the transaction that held it, kept
	// while a member still holds that id as its xid or its xmin.
	xids map[uint32]xidOwner
}

// xidOwner is a member's transaction that held an xid.
type xidOwner struct {
	node  string
	pid   int
	start time.Time // its xact_start
}

// is reports whether h is in the transaction o.
func (o xidOwner) is(h *Holder) bool {
	return o.node == h.Node && o.pid == h.PID && o.start.Equal(h.XactStart)
}

func (o xidOwner) same(p xidOwner) bool {
	return o.node == p.node && o.pid == p.pid && o.start.Equal(p.start)
}

func (o xidOwner) describe(now time.Time) string {
	where := ""
	if o.node != "" {
		where = " on standby " + o.node
	}
	return fmt.Sprintf("pid %d%s's transaction begun %s ago", o.pid, where, round(now.Sub(o.start)))
}

// New returns a Guard enforcing p (nil: DefaultPolicy, which only reports)
// on the primary behind pool. Give the guard its own pool: its sessions
// are recognised by pg_backend_pid and by the application_name
// "millrace-guard", which the CLI sets.
func New(pool *pgxpool.Pool, p *Policy, opts Options) *Guard {
	own := p != nil
	if p == nil {
		p = DefaultPolicy()
	}
	if p.Interval <= 0 {
		p.Interval = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g := &Guard{
		pool: pool, policy: p, ownPolicy: own, opts: opts, log: log,
		tracker: NewTracker(),
		metrics: newMetrics(opts.Registerer),
		classes: map[string]*classState{},
		logged:  map[string]bool{},
	}
	for _, u := range opts.StandbyURLs {
		g.standbys = append(g.standbys, &standby{name: standbyName(u), url: u})
	}
	return g
}

// standbyName is host:port of a connection string, or the string itself
// with its password redacted (it names the standby in logs and metric
// labels).
func standbyName(u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return cmdline.Redact(u)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}

// Policy returns the policy the guard enforces.
func (g *Guard) Policy() *Policy { return g.policy }

// Run polls every policy interval until ctx is done, then closes the
// guard's standby connections and returns nil. Errors of a poll are logged
// and the next poll tries again.
func (g *Guard) Run(ctx context.Context) error {
	defer g.Close()
	t := time.NewTicker(g.policy.Interval)
	defer t.Stop()
	for {
		_, err := g.Step(ctx)
		if err != nil && ctx.Err() == nil {
			g.metrics.pollErrors.Inc()
			g.log.Error("guard: poll failed", "error", err)
		}
		g.pollDone.Fire(err)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close closes the guard's connections to standbys (the primary's pool
// belongs to the caller). The guard reopens them if used again.
func (g *Guard) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.standbys {
		if s.pool != nil {
			s.pool.Close()
			s.pool = nil
		}
	}
}

func (g *Guard) standbyConns(ctx context.Context) ([]StandbyConn, map[string]error) {
	var conns []StandbyConn
	var errs map[string]error
	for _, s := range g.standbys {
		if s.pool == nil {
			cfg, err := pgxpool.ParseConfig(s.url)
			if err == nil {
				cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
				cfg.MaxConns = 2
				s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
			}
			if err != nil {
				if errs == nil {
					errs = map[string]error{}
				}
				errs[s.name] = err
				continue
			}
		}
		conns = append(conns, StandbyConn{Name: s.name, DB: s.pool})
	}
	return conns, errs
}

// Discover runs one discovery pass with the guard's standbys, tracker and
// watched tables.
func (g *Guard) Discover(ctx context.Context) (*Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.discover(ctx)
}

func (g *Guard) discover(ctx context.Context) (*Snapshot, error) {
	conns, errs := g.standbyConns(ctx)
	snap, err := Discover(ctx, g.pool, DiscoverOptions{
		Standbys:    conns,
		Tracker:     g.tracker,
		WatchTables: g.policy.WatchTables,
	})
	if err != nil {
		return nil, err
	}
	for name, err := range errs {
		if snap.StandbyErrors == nil {
			snap.StandbyErrors = map[string]error{}
		}
		snap.StandbyErrors[name] = err
	}
	for name, err := range snap.StandbyErrors {
		g.log.Warn("guard: standby not reachable", "standby", name, "error", err)
	}
	g.metrics.observe(snap)
	return snap, nil
}

// Step runs one poll: discover, decide, act. It returns the actions taken
// (or, in dry-run, that would be taken), including warnings.
func (g *Guard) Step(ctx context.Context) ([]Action, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	snap, err := g.discover(ctx)
	if err != nil {
		return nil, err
	}
	actions := g.decide(snap)
	seen := map[string]bool{}
	for i := range actions {
		a := &actions[i]
		key := fmt.Sprintf("%s/%s/%d/%d/%s/%s/%s/%s", a.Source, a.Node, a.PID, a.XactStart.UnixMicro(), a.Slot, a.GID, a.Rule, a.Kind)
		seen[key] = true
		quiet := a.Kind == ActionWarn || a.DryRun
		if quiet && g.logged[key] {
			continue // already reported for this holder
		}
		if !a.DryRun && a.Kind != ActionWarn {
			g.execute(ctx, a)
		}
		g.report(a)
		if quiet {
			g.logged[key] = true
		}
	}
	for k := range g.logged {
		if !seen[k] {
			delete(g.logged, k)
		}
	}
	return actions, nil
}

func (g *Guard) exempt(h *Holder) bool {
	if h.BackendType != "" && h.BackendType != "client backend" {
		return true
	}
	if h.ApplicationName == ApplicationName {
		return true
	}
	for _, r := range g.policy.ExemptRoles {
		if r == h.User {
			return true
		}
	}
	return false
}

// decide applies the policy to a snapshot. It updates the per-class
// horizon window state.
func (g *Guard) decide(snap *Snapshot) []Action {
	now := snap.Taken
	var actions []Action
	members := map[*Class][]*Holder{}
	all := make([]*Holder, 0, len(snap.Sessions)+len(snap.StandbySessions))
	for i := range snap.Sessions {
		all = append(all, &snap.Sessions[i])
	}
	for i := range snap.StandbySessions {
		all = append(all, &snap.StandbySessions[i])
	}
	for _, h := range all {
		if !h.InTransaction() || g.exempt(h) {
			continue
		}
		if c := g.policy.ClassOf(h); c != nil {
			members[c] = append(members[c], h)
		}
	}
	for ci := range g.policy.Classes {
		c := &g.policy.Classes[ci]
		ms := members[c]
		// Oldest transaction first.
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].XactStart.Before(ms[j].XactStart) })
		st := g.classes[c.Name]
		if st == nil {
			st = &classState{xids: map[uint32]xidOwner{}}
			g.classes[c.Name] = st
		}
		// Which snapshot each member holds. A snapshot's xmin is the oldest
		// xid running when it was taken: a member whose xmin is the xid of
		// another member's transaction took its snapshot while that one
		// ran, and holds the horizon that one pinned, from that one's
		// start, for as long as it lasts itself, though that one has ended
		// (a report retried just before the running one ends). The guard
		// remembers the members' xids to see it.
		for _, h := range ms {
			if h.BackendXID != 0 {
				if _, ok := st.xids[h.BackendXID]; !ok {
					st.xids[h.BackendXID] = xidOwner{node: h.Node, pid: h.PID, start: h.XactStart}
				}
			}
		}
		inherits := map[*Holder]xidOwner{}
		for _, h := range ms {
			if o, ok := st.xids[h.Xmin]; ok && h.Xmin != 0 && !o.is(h) {
				inherits[h] = o
			}
		}
		// ended returns the transactions, none of them among hs, whose
		// horizon a member of hs holds: they overlap hs as if still open.
		ended := func(hs []*Holder) []xidOwner {
			var out []xidOwner
			for _, h := range hs {
				o, ok := inherits[h]
				if ok && !slices.ContainsFunc(hs, o.is) && !slices.ContainsFunc(out, o.same) {
					out = append(out, o)
				}
			}
			return out
		}
		// heldFrom says, for a member holding an ended transaction's
		// horizon, which one.
		heldFrom := func(h *Holder, gone []xidOwner) string {
			if o, ok := inherits[h]; ok && slices.ContainsFunc(gone, o.same) {
				return fmt.Sprintf("; its snapshot's xmin is the xid of %s, now ended (or refused), whose horizon it holds", o.describe(now))
			}
			return ""
		}

		acted := map[*Holder]bool{}
		act := func(h *Holder, rule, reason string) {
			acted[h] = true
			actions = append(actions, g.sessionAction(c, h, rule, reason))
		}
		for _, h := range ms {
			switch {
			case c.MaxTransactionAge > 0 && h.Age > c.MaxTransactionAge:
				act(h, "max_transaction_age", fmt.Sprintf("transaction open %s > max_transaction_age %s", round(h.Age), c.MaxTransactionAge))
			case c.MaxIdleInTransaction > 0 && h.IdleInTransaction() && h.IdleFor > c.MaxIdleInTransaction:
				act(h, "max_idle_in_transaction", fmt.Sprintf("%s for %s > max_idle_in_transaction %s", h.State, round(h.IdleFor), c.MaxIdleInTransaction))
			}
		}
		// Live members: an open transaction not already aborted (an aborted
		// transaction holds no snapshot and waits for its client's ROLLBACK).
		var live []*Holder
		for _, h := range ms {
			if !acted[h] && h.State != "idle in transaction (aborted)" {
				live = append(live, h)
			}
		}
		// An ended transaction whose horizon a live member holds counts as
		// a member at once with it, older than every live one.
		if gone := ended(live); c.MaxConcurrent > 0 && len(gone)+len(live) > c.MaxConcurrent {
			n := len(gone) + len(live)
			for _, h := range live[max(0, c.MaxConcurrent-len(gone)):] {
				reason := fmt.Sprintf("%d members with open transactions > max_concurrent %d; acting on the youngest", n, c.MaxConcurrent)
				if len(gone) > 0 {
					reason = fmt.Sprintf("%d members at once (%d open, %d ended whose horizon an open one holds) > max_concurrent %d; acting on the youngest",
						n, len(live), len(gone), c.MaxConcurrent)
				}
				act(h, "max_concurrent", reason+heldFrom(h, gone))
			}
		}
		// Horizon window.
		var holding []*Holder
		for _, h := range ms {
			if h.HoldsHorizon() && h.State != "idle in transaction (aborted)" {
				holding = append(holding, h)
			}
		}
		if len(holding) == 0 {
			st.holdingSince = time.Time{}
		} else if c.HorizonWindow > 0 {
			if st.holdingSince.IsZero() {
				// The class has held the horizon at least since the oldest
				// horizon a holding member holds was pinned: the start of
				// its own transaction, or of the one whose xid is its xmin.
				st.holdingSince = now
				for _, h := range holding {
					from := h.XactStart
					if o, ok := inherits[h]; ok && o.start.Before(from) {
						from = o.start
					}
					if !from.IsZero() && from.Before(st.holdingSince) {
						st.holdingSince = from
					}
				}
			}
			var remaining []*Holder
			for _, h := range holding {
				if !acted[h] {
					remaining = append(remaining, h)
				}
			}
			gone := ended(remaining)
			held := now.Sub(st.holdingSince)
			if n := len(remaining) + len(gone); held > c.HorizonWindow && n >= 2 {
				// Every member that keeps the horizon pinned past the
				// window is acted on; the oldest goes on, unless the
				// horizon it holds is that of an ended transaction.
				keep := 1
				if o, ok := inherits[remaining[0]]; ok && slices.ContainsFunc(gone, o.same) {
					keep = 0
				}
				over := fmt.Sprintf("%d members overlapping", n)
				if len(gone) > 0 {
					over = fmt.Sprintf("%d members overlapping (%d open, %d ended whose horizon an open one holds)", n, len(remaining), len(gone))
				}
				for _, h := range remaining[keep:] {
					act(h, "horizon_window", fmt.Sprintf("class has held the horizon for %s without a break > horizon_window %s with %s; acting on every member but the oldest (and on the oldest when the horizon it holds is an ended transaction's)%s",
						round(held), c.HorizonWindow, over, heldFrom(h, gone)))
				}
			}
		}
		// Forget the xids no member holds any more.
		for x := range st.xids {
			if !slices.ContainsFunc(ms, func(h *Holder) bool { return h.BackendXID == x || h.Xmin == x }) {
				delete(st.xids, x)
			}
		}
	}
	for name := range g.classes {
		if g.classByName(name) == nil {
			delete(g.classes, name)
		}
	}

	// Slots and prepared transactions.
	for i := range snap.Holders {
		h := &snap.Holders[i]
		switch {
		case h.Source == SourceSlot && !h.Active && h.Age > g.policy.SlotMaxAge:
			a := Action{Class: "slots", Source: SourceSlot, Slot: h.Slot, Database: h.Database, Rule: "slot_max_age",
				Reason: fmt.Sprintf("inactive slot has held xmin %d for %s > slot_max_age %s", h.Xmin, round(h.Age), g.policy.SlotMaxAge),
				Kind:   ActionWarn, Configured: ActionWarn, Age: h.Age, XminAge: h.AgeXIDs, DryRun: g.opts.DryRun}
			if g.policy.DropInactiveSlots {
				a.Kind, a.Configured = ActionDropSlot, ActionDropSlot
			} else {
				a.Reason += " (drop_inactive_slots is off)"
			}
			actions = append(actions, a)
		case h.Source == SourcePrepared && h.Age > g.policy.PreparedMaxAge:
			a := Action{Class: "prepared", Source: SourcePrepared, GID: h.GID, Database: h.Database, Rule: "prepared_max_age",
				Reason: fmt.Sprintf("prepared transaction %s old > prepared_max_age %s", round(h.Age), g.policy.PreparedMaxAge),
				Kind:   ActionWarn, Configured: ActionWarn, Age: h.Age, XminAge: h.AgeXIDs, DryRun: g.opts.DryRun}
			if g.policy.RollbackPrepared {
				a.Kind, a.Configured = ActionRollbackPrepared, ActionRollbackPrepared
			} else {
				a.Reason += " (rollback_prepared is off)"
			}
			actions = append(actions, a)
		}
	}
	return actions
}

func (g *Guard) classByName(name string) *Class {
	for i := range g.policy.Classes {
		if g.policy.Classes[i].Name == name {
			return &g.policy.Classes[i]
		}
	}
	return nil
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

func (g *Guard) sessionAction(c *Class, h *Holder, rule, reason string) Action {
	a := Action{
		Class: c.Name, Source: h.Source, Node: h.Node, PID: h.PID, Database: h.Database,
		Rule: rule, Reason: reason, Kind: c.Action, Configured: c.Action,
		Age: h.Age, XminAge: h.AgeXIDs, DryRun: g.opts.DryRun, XactStart: h.XactStart,
	}
	if a.Kind == ActionCancel && h.IdleInTransaction() {
		a.Kind = ActionTerminate
		a.Reason += "; session is idle in transaction, where cancel does nothing: escalated to terminate"
	}
	return a
}

func (g *Guard) execute(ctx context.Context, a *Action) {
	switch a.Kind {
	case ActionCancel, ActionTerminate:
		db := Querier(g.pool)
		if a.Node != "" {
			for _, s := range g.standbys {
				if s.name == a.Node && s.pool != nil {
					db = s.pool
				}
			}
			if db == Querier(g.pool) {
				a.Err = fmt.Errorf("no connection to standby %s", a.Node)
				return
			}
		}
		fn := "pg_cancel_backend"
		if a.Kind == ActionTerminate {
			fn = "pg_terminate_backend"
		}
		// Signal only if the session is still in the same transaction:
		// its pid may have moved on to another one (or to another client).
		var ok bool
		err := db.QueryRow(ctx, "SELECT coalesce((SELECT "+fn+"(pid) FROM pg_stat_activity WHERE pid = $1 AND xact_start = $2), false)", a.PID, a.XactStart).Scan(&ok)
		a.Done, a.Err = ok, err
		if err == nil && !ok {
			a.Err = errors.New("not signalled: the transaction had already ended or the role may not signal it")
		}
	case ActionDropSlot:
		_, err := g.pool.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", a.Slot)
		a.Done, a.Err = err == nil, err
	case ActionRollbackPrepared:
		cfg := g.pool.Config().ConnConfig.Copy()
		cfg.Database = a.Database
		cfg.RuntimeParams["application_name"] = ApplicationName
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			a.Err = fmt.Errorf("connect to database %q: %w", a.Database, err)
			return
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(a.GID))
		a.Done, a.Err = err == nil, err
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (g *Guard) report(a *Action) {
	attrs := []any{
		"class", a.Class, "source", string(a.Source), "reason", a.Reason, "rule", a.Rule,
		"action", string(a.Kind), "age_s", a.Age.Seconds(), "xmin_age", a.XminAge, "dry_run", a.DryRun,
	}
	if a.PID != 0 {
		attrs = append(attrs, "pid", a.PID)
	}
	if a.Node != "" {
		attrs = append(attrs, "node", a.Node)
	}
	if a.Slot != "" {
		attrs = append(attrs, "slot", a.Slot)
	}
	if a.GID != "" {
		attrs = append(attrs, "gid", a.GID, "database", a.Database)
	}
	if a.Kind != a.Configured {
		attrs = append(attrs, "configured_action", string(a.Configured))
	}
	label := string(a.Kind)
	switch {
	case a.Kind == ActionWarn:
		g.log.Warn("guard: warning", attrs...)
	case a.DryRun:
		label = "would_" + label
		g.log.Info("guard: would "+string(a.Kind)+" (dry run)", attrs...)
	case a.Err != nil:
		g.log.Error("guard: "+string(a.Kind)+" failed", append(attrs, "error", a.Err.Error())...)
	default:
		g.log.Warn("guard: "+string(a.Kind), append(attrs, "done", a.Done)...)
	}
	g.metrics.actions.WithLabelValues(a.Class, label).Inc()
}
