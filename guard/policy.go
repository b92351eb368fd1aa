package guard

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ActionKind is what the guard does to a holder that breaks the policy.
type ActionKind string

// The actions a class can take.
const (
	// ActionWarn only logs.
	ActionWarn ActionKind = "warn"
	// ActionCancel cancels the running statement (pg_cancel_backend). A
	// session idle in a transaction has no statement to cancel, so cancel
	// escalates to terminate for it.
	ActionCancel ActionKind = "cancel"
	// ActionTerminate ends the session (pg_terminate_backend); its
	// transaction rolls back.
	ActionTerminate ActionKind = "terminate"
	// ActionDropSlot drops an inactive replication slot (opt-in).
	ActionDropSlot ActionKind = "drop_slot"
	// ActionRollbackPrepared rolls back a prepared transaction (opt-in).
	ActionRollbackPrepared ActionKind = "rollback_prepared"
)

// Match selects the sessions of a class. Every field given must match;
// patterns are globs where * matches any run of characters and ? any one.
type Match struct {
	// Comment maps SQLCommenter keys to value patterns, all of which must
	// be present and match in the tags parsed from the query text.
	Comment         map[string]string
	ApplicationName string
	User            string
	Database        string
}

// Class is a workload class: the sessions it matches and the limits they
// must keep.
type Class struct {
	Name  string
	Match Match
	// MaxTransactionAge: a member's transaction may not be older (0: no limit).
	MaxTransactionAge time.Duration
	// MaxIdleInTransaction: a member may not sit idle in a transaction
	// longer (0: no limit).
	MaxIdleInTransaction time.Duration
	// MaxConcurrent: at most this many members may have an open
	// transaction at once, a member counting too the ended member's
	// transaction whose xid its snapshot holds as xmin; the youngest
	// beyond it are acted on (0: no limit).
	MaxConcurrent int
	// HorizonWindow: members of the class may not hold the horizon
	// continuously (without a moment when none holds it, dated by the
	// horizon they hold) for longer than this while two or more of them
	// overlap (a member holding an ended member's xid as xmin overlaps
	// it); then every holding member but the oldest is acted on, and the
	// oldest too if the horizon it holds is an ended member's (0: no
	// limit).
	HorizonWindow time.Duration
	// Action is applied to members breaking a limit (default warn).
	Action ActionKind
	// Line is the line of the class in the policy file.
	Line int
}

// Policy is the guard's configuration.
type Policy struct {
	// Interval between polls (default 1s).
	Interval time.Duration
	// ExemptRoles are never acted on.
	ExemptRoles []string
	// WatchTables are reported with their dead tuples; empty: the five
	// tables with the most dead tuples.
	WatchTables []string
	// DropInactiveSlots allows dropping inactive slots older than
	// SlotMaxAge; otherwise they are only warned about.
	DropInactiveSlots bool
	// RollbackPrepared allows rolling back prepared transactions older
	// than PreparedMaxAge; otherwise they are only warned about.
	RollbackPrepared bool
	// SlotMaxAge is how long an inactive slot may hold an xmin (default 10m).
	SlotMaxAge time.Duration
	// PreparedMaxAge is how long a prepared transaction may stay (default 10m).
	PreparedMaxAge time.Duration
	// Classes in order: the first matching class wins; sessions matching
	// none are never touched.
	Classes []Class
}

// DefaultPolicy returns a policy with defaults and no classes: it reports
// and warns but never acts on a session.
func DefaultPolicy() *Policy {
	return &Policy{Interval: time.Second, SlotMaxAge: 10 * time.Minute, PreparedMaxAge: 10 * time.Minute}
}

// LoadPolicy reads and validates a policy file.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, data)
}

// ParsePolicy parses and validates a YAML policy. name prefixes error
// messages, which name the offending line: `policy.yaml:12: class
// "analytics": max_transaction_age: invalid duration "5x"`.
func ParsePolicy(name string, data []byte) (*Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p := DefaultPolicy()
	if len(doc.Content) == 0 {
		return p, nil
	}
	d := &decoder{name: name}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, d.errf(root, "", "the policy must be a mapping of keys, got %s", kindName(root))
	}
	err := d.mapping(root, "", map[string]func(*yaml.Node) error{
		"interval": func(n *yaml.Node) error { return d.duration(n, "interval", &p.Interval, true) },
		"exempt_roles": func(n *yaml.Node) error {
			return d.strings(n, "exempt_roles", &p.ExemptRoles)
		},
		"watch_tables": func(n *yaml.Node) error {
			return d.strings(n, "watch_tables", &p.WatchTables)
		},
		"drop_inactive_slots": func(n *yaml.Node) error { return d.bool(n, "drop_inactive_slots", &p.DropInactiveSlots) },
		"rollback_prepared":   func(n *yaml.Node) error { return d.bool(n, "rollback_prepared", &p.RollbackPrepared) },
		"slot_max_age":        func(n *yaml.Node) error { return d.duration(n, "slot_max_age", &p.SlotMaxAge, true) },
		"prepared_max_age":    func(n *yaml.Node) error { return d.duration(n, "prepared_max_age", &p.PreparedMaxAge, true) },
		"classes":             func(n *yaml.Node) error { return d.classes(n, p) },
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

type decoder struct{ name string }

func (d *decoder) errf(n *yaml.Node, ctx, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if ctx != "" {
		msg = ctx + ": " + msg
	}
	return fmt.Errorf("%s:%d: %s", d.name, n.Line, msg)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// mapping walks a mapping node, calling the handler of each key; unknown
// and repeated keys are errors.
func (d *decoder) mapping(n *yaml.Node, ctx string, keys map[string]func(*yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := keys[k.Value]
		if !ok {
			known := make([]string, 0, len(keys))
			for name := range keys {
				known = append(known, name)
			}
			sort.Strings(known)
			return d.errf(k, ctx, "unknown key %q (known: %s)", k.Value, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return d.errf(k, ctx, "key %q given twice", k.Value)
		}
		seen[k.Value] = true
		if err := h(v); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) scalar(n *yaml.Node, ctx, key string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", d.errf(n, ctx, "%s: want a single value, got %s", key, kindName(n))
	}
	return n.Value, nil
}

func (d *decoder) duration(n *yaml.Node, key string, dst *time.Duration, positive bool) error {
	return d.durationIn(n, "", key, dst, positive)
}

func (d *decoder) durationIn(n *yaml.Node, ctx, key string, dst *time.Duration, positive bool) error {
	s, err := d.scalar(n, ctx, key)
	if err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return d.errf(n, ctx, "%s: invalid duration %q (use e.g. 30s, 5m, 1h30m)", key, s)
	}
	if v < 0 || (positive && v == 0) {
		return d.errf(n, ctx, "%s: duration %q must be positive", key, s)
	}
	*dst = v
	return nil
}

func (d *decoder) bool(n *yaml.Node, key string, dst *bool) error {
	s, err := d.scalar(n, "", key)
	if err != nil {
		return err
	}
	var b bool
	if n.Tag != "!!bool" || n.Decode(&b) != nil {
		return d.errf(n, "", "%s: want true or false, got %q", key, s)
	}
	*dst = b
	return nil
}

func (d *decoder) strings(n *yaml.Node, key string, dst *[]string) error {
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, "", "%s: want a list, got %s", key, kindName(n))
	}
	for _, e := range n.Content {
		s, err := d.scalar(e, "", key)
		if err != nil {
			return err
		}
		if s == "" {
			return d.errf(e, "", "%s: empty name", key)
		}
		*dst = append(*dst, s)
	}
	return nil
}

func (d *decoder) classes(n *yaml.Node, p *Policy) error {
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, "", "classes: want a list of classes, got %s", kindName(n))
	}
	names := map[string]int{}
	for i, cn := range n.Content {
		ctx := fmt.Sprintf("class #%d", i+1)
		if cn.Kind != yaml.MappingNode {
			return d.errf(cn, ctx, "want a mapping with name, match and limits, got %s", kindName(cn))
		}
		// Find the name first so every later error names the class.
		for j := 0; j+1 < len(cn.Content); j += 2 {
			if cn.Content[j].Value == "name" && cn.Content[j+1].Kind == yaml.ScalarNode && cn.Content[j+1].Value != "" {
				ctx = fmt.Sprintf("class %q", cn.Content[j+1].Value)
			}
		}
		c := Class{Action: ActionWarn, Line: cn.Line}
		var matchNode *yaml.Node
		err := d.mapping(cn, ctx, map[string]func(*yaml.Node) error{
			"name": func(v *yaml.Node) error {
				s, err := d.scalar(v, ctx, "name")
				if err != nil {
					return err
				}
				if s == "" {
					return d.errf(v, ctx, "name: empty")
				}
				if prev, dup := names[s]; dup {
					return d.errf(v, ctx, "name: already used by the class at line %d", prev)
				}
				names[s] = cn.Line
				c.Name = s
				return nil
			},
			"match": func(v *yaml.Node) error { matchNode = v; return d.match(v, ctx, &c.Match) },
			"max_transaction_age": func(v *yaml.Node) error {
				return d.durationIn(v, ctx, "max_transaction_age", &c.MaxTransactionAge, true)
			},
			"max_idle_in_transaction": func(v *yaml.Node) error {
				return d.durationIn(v, ctx, "max_idle_in_transaction", &c.MaxIdleInTransaction, true)
			},
			"horizon_window": func(v *yaml.Node) error {
				return d.durationIn(v, ctx, "horizon_window", &c.HorizonWindow, true)
			},
			"max_concurrent": func(v *yaml.Node) error {
				s, err := d.scalar(v, ctx, "max_concurrent")
				if err != nil {
					return err
				}
				var k int
				if v.Tag != "!!int" || v.Decode(&k) != nil || k < 1 {
					return d.errf(v, ctx, "max_concurrent: want a whole number of at least 1, got %q", s)
				}
				c.MaxConcurrent = k
				return nil
			},
			"action": func(v *yaml.Node) error {
				s, err := d.scalar(v, ctx, "action")
				if err != nil {
					return err
				}
				switch ActionKind(s) {
				case ActionWarn, ActionCancel, ActionTerminate:
					c.Action = ActionKind(s)
				default:
					return d.errf(v, ctx, "action: %q is not one of warn, cancel, terminate", s)
				}
				return nil
			},
		})
		if err != nil {
			return err
		}
		if c.Name == "" {
			return d.errf(cn, ctx, "missing name")
		}
		if matchNode == nil {
			return d.errf(cn, ctx, "missing match (a class matching every session would be a foot-gun; use application_name: \"*\" to mean it)")
		}
		p.Classes = append(p.Classes, c)
	}
	return nil
}

func (d *decoder) match(n *yaml.Node, ctx string, m *Match) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, ctx, "match: want a mapping, got %s", kindName(n))
	}
	if len(n.Content) == 0 {
		return d.errf(n, ctx, "match: empty (give comment, application_name, user or database)")
	}
	pattern := func(key string, dst *string) func(*yaml.Node) error {
		return func(v *yaml.Node) error {
			s, err := d.scalar(v, ctx, "match: "+key)
			if err != nil {
				return err
			}
			if s == "" {
				return d.errf(v, ctx, "match: %s: empty pattern", key)
			}
			*dst = s
			return nil
		}
	}
	return d.mapping(n, ctx+": match", map[string]func(*yaml.Node) error{
		"application_name": pattern("application_name", &m.ApplicationName),
		"user":             pattern("user", &m.User),
		"database":         pattern("database", &m.Database),
		"comment": func(v *yaml.Node) error {
			if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
				return d.errf(v, ctx, "match: comment: want a mapping of SQLCommenter keys to patterns, got %s", kindName(v))
			}
			m.Comment = map[string]string{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, val := v.Content[i], v.Content[i+1]
				s, err := d.scalar(val, ctx, "match: comment: "+k.Value)
				if err != nil {
					return err
				}
				if _, dup := m.Comment[k.Value]; dup {
					return d.errf(k, ctx, "match: comment: key %q given twice", k.Value)
				}
				m.Comment[k.Value] = s
			}
			return nil
		},
	})
}

// Matches reports whether a session belongs to the class.
func (c *Class) Matches(h *Holder) bool {
	m := &c.Match
	if m.ApplicationName != "" && !Glob(m.ApplicationName, h.ApplicationName) {
		return false
	}
	if m.User != "" && !Glob(m.User, h.User) {
		return false
	}
	if m.Database != "" && !Glob(m.Database, h.Database) {
		return false
	}
	for k, pat := range m.Comment {
		v, ok := h.Tags[k]
		if !ok || !Glob(pat, v) {
			return false
		}
	}
	return true
}

// ClassOf returns the first class matching the session, or nil.
func (p *Policy) ClassOf(h *Holder) *Class {
	for i := range p.Classes {
		if p.Classes[i].Matches(h) {
			return &p.Classes[i]
		}
	}
	return nil
}

// Glob reports whether s matches pattern, where * matches any run of
// characters (including none) and ? exactly one; every other character
// matches itself.
func Glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	pi, ti := 0, 0
	star, mark := -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
