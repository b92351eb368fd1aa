package guard

import (
	"context"
	"fmt"
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
// against the guard's thresholds. It returns the worst status and a
// one-line summary naming the worst holder, e.g.
//
//	CRITICAL: oldest xmin 1834 s, 52000 xids (session pid 4242 idle in transaction, app=psql user=alice db=app) holding 120000 dead tuples
//
// On error the status is Unknown and the line says why.
func (g *Guard) Check(ctx context.Context) (Status, string, error) {
	snap, err := g.Discover(ctx)
	if err != nil {
		return Unknown, "UNKNOWN: " + err.Error(), err
	}
	st, line := Summarize(snap, g.opts.Thresholds)
	return st, line, nil
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
