package guard

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Status is a Nagios-style check result; its value is the exit code.
type Status int

// The check results.
const (
	OK       Status = 0
	Warning  Status = 1
	Critical Status = 2
	Unknown  Status = 3
)

// String returns OK, WARNING, CRITICAL or UNKNOWN.
func (s Status) String() string {
	switch s {
	case OK:
		return "OK"
	case Warning:
		return "WARNING"
	case Critical:
		return "CRITICAL"
	}
	return "UNKNOWN"
}

// Grade grades one holder against the thresholds (by seconds and by
// transactions; the worse wins).
func (t Thresholds) Grade(h *Holder) Status {
	t = t.withDefaults()
	st := OK
	if t.WarnAge > 0 && h.Age >= t.WarnAge || t.WarnXIDs > 0 && h.AgeXIDs >= t.WarnXIDs {
		st = Warning
	}
	if t.CritAge > 0 && h.Age >= t.CritAge || t.CritXIDs > 0 && h.AgeXIDs >= t.CritXIDs {
		st = Critical
	}
	return st
}

// Check runs one discovery pass and grades the holders of the horizon
// against the guard's thresholds and, when the guard was given a policy
// (New with a non-nil one), against its rules: a session that breaks
// one of its class's limits (max_transaction_age,
// max_idle_in_transaction, max_concurrent, horizon_window), or a slot or
// prepared transaction past its age, is WARNING when the class's action
// is warn and CRITICAL otherwise, whatever the thresholds say. It returns
// the worst status and a one-line summary naming the worst holder, e.g.
//
//	CRITICAL: oldest xmin 1834 s, 52000 xids (session pid 4242 idle in transaction, app=psql user=alice db=app) holding 120000 dead tuples
//	CRITICAL: session pid 4242 (class analytics) breaks max_idle_in_transaction: idle in transaction for 85s > max_idle_in_transaction 30s (action cancel); oldest xmin ...
//
// It signals nothing. On error the status is Unknown and the line says
// why.
func (g *Guard) Check(ctx context.Context) (Status, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	snap, err := g.discover(ctx)
	if err != nil {
		return Unknown, "UNKNOWN: " + err.Error(), err
	}
	st, line := Summarize(snap, g.opts.Thresholds)
	if !g.ownPolicy {
		return st, line, nil
	}
	pst, broken := policyGrade(g.decide(snap))
	if pst == OK || pst < st {
		return st, line, nil
	}
	return pst, pst.String() + ": " + broken + "; " + strings.TrimPrefix(line, st.String()+": "), nil
}

// policyGrade grades the actions the policy asks for: warn is WARNING,
// any other CRITICAL. It returns the worst and, for it, what was broken
// in a few words (and how many more rules are).
func policyGrade(actions []Action) (Status, string) {
	st, worst := OK, -1
	for i, a := range actions {
		g := Critical
		if a.Configured == ActionWarn {
			g = Warning
		}
		if g > st {
			st, worst = g, i
		}
	}
	if worst < 0 {
		return OK, ""
	}
	a := actions[worst]
	who := fmt.Sprintf("session pid %d", a.PID)
	switch {
	case a.Source == SourceSlot:
		who = "slot " + a.Slot
	case a.Source == SourcePrepared:
		who = "prepared transaction " + a.GID
	case a.Node != "":
		who += " on " + a.Node
	}
	line := fmt.Sprintf("%s (class %s) breaks %s: %s (action %s)", who, a.Class, a.Rule, a.Reason, a.Configured)
	if n := len(actions) - 1; n > 0 {
		line += fmt.Sprintf(", and %d more", n)
	}
	return st, line
}

// Summarize grades a snapshot (see Check).
func Summarize(snap *Snapshot, t Thresholds) (Status, string) {
	worst, st := (*Holder)(nil), OK
	for i := range snap.Holders {
		h := &snap.Holders[i]
		g := t.Grade(h)
		if worst == nil || g > st || g == st && h.AgeXIDs > worst.AgeXIDs {
			worst, st = h, g
		}
	}
	dead := snap.DeadTuples()
	tables := "the hottest tables"
	if len(snap.Tables) == 1 {
		tables = snap.Tables[0].Name
	}
	if worst == nil {
		return OK, fmt.Sprintf("OK: no transaction, standby, slot or prepared transaction holds the horizon; %s on %s", deadTuples(dead), tables)
	}
	line := fmt.Sprintf("%s: oldest xmin %d s, %d xids (%s) holding %s",
		st, int64(worst.Age/time.Second), worst.AgeXIDs, worst.Describe(), deadTuples(dead))
	if len(snap.StandbyErrors) > 0 {
		line += fmt.Sprintf("; %d standby(s) unreachable", len(snap.StandbyErrors))
	}
	return st, line
}

// deadTuples says "1 dead tuple" or "n dead tuples".
func deadTuples(n int64) string {
	if n == 1 {
		return "1 dead tuple"
	}
	return fmt.Sprintf("%d dead tuples", n)
}
