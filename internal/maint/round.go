package maint

import "context"

// round is what the steps of one round share.
type round struct {
	// renewed says the round renewed the term (or is an operator's, term
	// 0). The steps the server does not fence (watching listeners, ending
	// readers of the ring) act only then.
	renewed bool
}

// step is one duty of a round.
type step struct {
	// name says what it does, for the log: "millrace: <name> failed".
	name string
	// run does it. It returns the term's refusal (storage.ErrFenced) as
	// it got it, and any error it does not handle itself.
	run func(m *Maintainer, ctx context.Context, r *round) error
}

// steps are the duties of a round, in the order a round runs them.
var steps = []step{
	{"renewing the leader term", (*Maintainer).renewStep},  // leader.go
	{"promoting scheduled jobs", (*Maintainer).promote},    // promote.go
	{"rescue", (*Maintainer).rescue},                       // rescue.go
	{"enqueuing periodic jobs", (*Maintainer).runPeriodic}, // periodic.go
	{"watching listeners", (*Maintainer).watchListeners},   // listeners.go
	{"tallying history", (*Maintainer).tally},              // tally.go
	{"expiring history", (*Maintainer).expire},             // expire.go
	{"rotation", (*Maintainer).rotateRing},                 // rotate.go, holders.go, readers.go
}

// Step runs one round of maintenance: each step in turn, the renewal of
// the leader's term first. A step refused for the term (the term is over)
// ends the round: Step returns ErrLostLead and runs nothing more. Another
// error is logged, unless ctx has ended, and the round goes on.
func (m *Maintainer) Step(ctx context.Context) error {
	return m.run(ctx, steps)
}

// run runs a round of steps: the one place where a refused term becomes
// ErrLostLead.
func (m *Maintainer) run(ctx context.Context, steps []step) error {
	r := &round{}
	for _, s := range steps {
		err := s.run(m, ctx, r)
		switch {
		case err == nil:
		case lostLead(err):
			return ErrLostLead
		case ctx.Err() == nil:
			m.cfg.Logger.Warn("millrace: "+s.name+" failed", "err", err)
		}
	}
	return nil
}
