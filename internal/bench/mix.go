package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Mix is the --mix flag: the percentage of offered jobs of each special
// kind; the rest are plain jobs. Only strategies that implement Mixer can
// run a mix.
type Mix struct {
	Fail   int `json:"fail"`   // the first attempt fails, the retry succeeds
	Snooze int `json:"snooze"` // the first run snoozes (MixSnooze), the next succeeds
	Cancel int `json:"cancel"` // inserted MixCancelLead ahead and cancelled at once: never runs
	Sched  int `json:"sched"`  // scheduled MixSchedMin to MixSchedMax ahead, uniformly
	// Unique is the share of jobs inserted with the unique key of an
	// earlier scheduled job that has not run yet: they must come back as
	// duplicates and never run. Their originals are scheduled jobs, so
	// Unique may not exceed Sched.
	Unique int `json:"unique"`
}

// The timings of a mix.
const (
	MixSnooze     = 100 * time.Millisecond // how long a snoozing job snoozes
	MixBackoff    = 100 * time.Millisecond // the retry backoff of a failed attempt (Env.RetryBackoff)
	MixCancelLead = time.Second            // how far ahead a job to be cancelled is scheduled
	MixSchedMin   = time.Second            // the range of a scheduled job's delay
	MixSchedMax   = 30 * time.Second
)

// mixKeys are the --mix keys in the order String writes them.
var mixKeys = []string{"fail", "snooze", "cancel", "sched", "unique"}

func (m *Mix) field(key string) *int {
	switch key {
	case "fail":
		return &m.Fail
	case "snooze":
		return &m.Snooze
	case "cancel":
		return &m.Cancel
	case "sched":
		return &m.Sched
	case "unique":
		return &m.Unique
	}
	return nil
}

// Zero reports whether the mix has no special job: every job is plain.
func (m Mix) Zero() bool { return m == Mix{} }

// Sum is the percentage of special jobs.
func (m Mix) Sum() int { return m.Fail + m.Snooze + m.Cancel + m.Sched + m.Unique }

// String is the mix in --mix syntax, keys with 0 left out.
func (m Mix) String() string {
	var parts []string
	for _, k := range mixKeys {
		if v := *m.field(k); v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	return strings.Join(parts, ",")
}

// ParseMix parses --mix: comma-separated KEY=PERCENT pairs, KEY one of
// fail, snooze, cancel, sched, unique and PERCENT a whole number from 0 to
// 100. The percentages may not add up to more than 100, and unique may not
// exceed sched (each duplicate is inserted against a scheduled job). An
// empty string is no mix.
func ParseMix(s string) (Mix, error) {
	var m Mix
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Mix{}, fmt.Errorf("--mix %q: empty entry", s)
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return Mix{}, fmt.Errorf("--mix %q: %q is not KEY=PERCENT", s, part)
		}
		f := m.field(k)
		if f == nil {
			return Mix{}, fmt.Errorf("--mix %q: unknown key %q (have: %s)", s, k, strings.Join(mixKeys, ", "))
		}
		if seen[k] {
			return Mix{}, fmt.Errorf("--mix %q: %s given twice", s, k)
		}
		seen[k] = true
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return Mix{}, fmt.Errorf("--mix %q: %s=%q: want a whole percentage from 0 to 100", s, k, v)
		}
		*f = n
	}
	if m.Sum() > 100 {
		return Mix{}, fmt.Errorf("--mix %q: the percentages add up to %d, more than 100", s, m.Sum())
	}
	if m.Unique > m.Sched {
		return Mix{}, fmt.Errorf("--mix %q: unique=%d is more than sched=%d: each unique duplicate is inserted against an earlier scheduled job, so unique may not exceed sched", s, m.Unique, m.Sched)
	}
	return m, nil
}

// mixKind is what a job of the mix does.
type mixKind uint8

const (
	kindPlain mixKind = iota
	kindFail
	kindSnooze
	kindCancel
	kindSched
	kindUniqueOrig // a scheduled job that a unique duplicate follows
	kindUniqueDup  // inserted with the key of the job before it
	kindPoison     // the chaos scenario's: its handler crashes its process
)

func (k mixKind) String() string {
	return [...]string{"plain", "fail", "snooze", "cancel", "sched", "unique original", "unique duplicate", "poison"}[k]
}

// runsWanted is how many times a job of kind k starts when all goes well
// (a job to be cancelled runs once if its cancel misses).
func (k mixKind) runsWanted() uint32 {
	switch k {
	case kindFail, kindSnooze:
		return 2
	case kindUniqueDup:
		return 0
	case kindPoison:
		return ChaosPoisonAttempts
	}
	return 1
}

// scheduled reports whether a job of kind k is inserted with a run_at.
func (k mixKind) scheduled() bool { return k == kindSched || k == kindUniqueOrig }

// delayed says a job of kind k is stored to run later (or be cancelled
// first).
func (k mixKind) delayed() bool { return k.scheduled() || k == kindCancel }

// mixBlock is a block of 100 job kinds holding exactly the mix's
// percentages, in random order, each unique duplicate right after its
// original (so that one producer goroutine inserts the two in turn).
func (m Mix) block(r *rand.Rand) []mixKind {
	var units [][]mixKind
	add := func(n int, u ...mixKind) {
		for range n {
			units = append(units, u)
		}
	}
	add(m.Fail, kindFail)
	add(m.Snooze, kindSnooze)
	add(m.Cancel, kindCancel)
	add(m.Sched-m.Unique, kindSched)
	add(m.Unique, kindUniqueOrig, kindUniqueDup)
	add(100-m.Sum(), kindPlain)
	r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	out := make([]mixKind, 0, 100)
	for _, u := range units {
		out = append(out, u...)
	}
	return out
}

// mixer hands out job kinds block by block.
type mixer struct {
	m    Mix
	r    *rand.Rand
	next []mixKind
}

func newMixer(m Mix, seed uint64) *mixer {
	return &mixer{m: m, r: rand.New(rand.NewPCG(seed, 0x6d6978))}
}

// kind returns the next job's kind.
func (x *mixer) kind() mixKind {
	if len(x.next) == 0 {
		x.next = x.m.block(x.r)
	}
	k := x.next[0]
	x.next = x.next[1:]
	return k
}

// ErrMixFail is what the bench's handler returns for the first attempt of
// a job of the mix's fail share: the strategy fails the attempt and
// retries it after Env.RetryBackoff.
var ErrMixFail = errors.New("bench: the first attempt of this job fails (--mix fail)")

// SnoozeError is what the bench's handler returns for the first run of a
// job of the mix's snooze share: the strategy runs it again after Delay
// without counting an attempt.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("bench: snooze %v (--mix snooze)", e.Delay) }
