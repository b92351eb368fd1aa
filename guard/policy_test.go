package guard

import (
	"strings"
	"testing"
	"time"
)

func TestLoadExamplePolicy(t *testing.T) {
	p, err := LoadPolicy("../examples/analytics-budget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Classes) != 1 {
		t.Fatalf("classes = %d, want 1", len(p.Classes))
	}
	c := p.Classes[0]
	if c.Name != "analytics" || c.Match.ApplicationName != "millrace-bench-analytics" || c.MaxConcurrent != 1 ||
		c.Action != ActionCancel || c.HorizonWindow != 30*time.Second || c.MaxTransactionAge != 150*time.Second {
		t.Fatalf("class = %+v", c)
	}
	if p.Interval != time.Second {
		t.Fatalf("interval = %v", p.Interval)
	}
}

// TestLoadWindowPolicy checks the shipped analytics-window policy: the bench's
// readers, one at a time, none older than 15 s, and a poll five times a
// second.
func TestLoadWindowPolicy(t *testing.T) {
	p, err := LoadPolicy("../examples/analytics-window.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Classes) != 1 || p.Interval != 200*time.Millisecond {
		t.Fatalf("classes = %d, interval %v", len(p.Classes), p.Interval)
	}
	c := p.Classes[0]
	if c.Name != "analytics" || c.Match.ApplicationName != "millrace-bench-analytics" || c.MaxConcurrent != 1 ||
		c.Action != ActionCancel || c.HorizonWindow != 10*time.Second || c.MaxTransactionAge != 15*time.Second ||
		c.MaxIdleInTransaction != 10*time.Second {
		t.Fatalf("class = %+v", c)
	}
}

func TestParsePolicyFull(t *testing.T) {
	src := `
interval: 2s
exempt_roles: [postgres_admin, dba]
watch_tables: [public.jobs]
drop_inactive_slots: true
rollback_prepared: false
slot_max_age: 5m
prepared_max_age: 1h
classes:
  - name: analytics
    match: {comment: {app: reports}, application_name: "report*", user: "ana?", database: prod}
    max_transaction_age: 5m
    max_idle_in_transaction: 30s
    max_concurrent: 2
    horizon_window: 60s
    action: terminate
  - name: batch
    match: {user: batch}
`
	p, err := ParsePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Interval != 2*time.Second || len(p.ExemptRoles) != 2 || p.WatchTables[0] != "public.jobs" ||
		!p.DropInactiveSlots || p.RollbackPrepared || p.SlotMaxAge != 5*time.Minute || p.PreparedMaxAge != time.Hour {
		t.Fatalf("policy = %+v", p)
	}
	a, b := p.Classes[0], p.Classes[1]
	if a.Match.Comment["app"] != "reports" || a.Match.ApplicationName != "report*" || a.MaxConcurrent != 2 ||
		a.Action != ActionTerminate || a.Line != 10 {
		t.Fatalf("class a = %+v", a)
	}
	if b.Action != ActionWarn || b.MaxConcurrent != 0 {
		t.Fatalf("class b = %+v (default action is warn)", b)
	}
	h := &Holder{ApplicationName: "reporting", User: "anal", Database: "prod", Tags: map[string]string{"app": "reports"}}
	if p.ClassOf(h) != &p.Classes[0] {
		t.Fatal("session should match analytics")
	}
	h.Tags = nil
	if p.ClassOf(h) != nil {
		t.Fatal("session without the comment tag matched")
	}
	h.User = "batch"
	if c := p.ClassOf(h); c == nil || c.Name != "batch" {
		t.Fatal("batch user should match class batch")
	}
}

func TestParsePolicyErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"interval: 1s\nclasses:\n  - name: analytics\n    match: {user: x}\n    max_transaction_age: 5x\n",
			`p.yaml:5: class "analytics": max_transaction_age: invalid duration "5x"`},
		{"interval: 1s\nintervall: 2s\n", `p.yaml:2: unknown key "intervall"`},
		{"classes:\n  - name: a\n    match: {user: x}\n    acton: cancel\n", `p.yaml:4: class "a": unknown key "acton"`},
		{"classes:\n  - name: a\n    match: {usr: x}\n", `p.yaml:3: class "a": match: unknown key "usr"`},
		{"classes:\n  - name: a\n    match: {user: x}\n    action: kill\n", `p.yaml:4: class "a": action: "kill" is not one of warn, cancel, terminate`},
		{"classes:\n  - name: a\n    match: {user: x}\n    max_concurrent: 0\n", `p.yaml:4: class "a": max_concurrent: want a whole number of at least 1`},
		{"classes:\n  - name: a\n    max_concurrent: 1\n", `p.yaml:2: class "a": missing match`},
		{"classes:\n  - match: {user: x}\n", `p.yaml:2: class #1: missing name`},
		{"classes:\n  - name: a\n    match: {user: x}\n  - name: a\n    match: {user: y}\n", `p.yaml:4: class "a": name: already used by the class at line 2`},
		{"drop_inactive_slots: yes please\n", `p.yaml:1: drop_inactive_slots: want true or false`},
		{"exempt_roles: admin\n", `p.yaml:1: exempt_roles: want a list`},
		{"interval: 0s\n", `p.yaml:1: interval: duration "0s" must be positive`},
		{"interval: [1s\n", `p.yaml:`},
		{"- a\n- b\n", `p.yaml:1: the policy must be a mapping`},
	}
	for _, c := range cases {
		_, err := ParsePolicy("p.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePolicy(%q) error = %v, want containing %q", c.src, err, c.want)
		}
	}
}

func TestEmptyPolicy(t *testing.T) {
	p, err := ParsePolicy("empty.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Interval != time.Second || len(p.Classes) != 0 || p.SlotMaxAge != 10*time.Minute {
		t.Fatalf("defaults = %+v", p)
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		p, s string
		ok   bool
	}{
		{"report*", "reports", true}, {"report*", "report", true}, {"report*", "xreport", false},
		{"*", "", true}, {"a?c", "abc", true}, {"a?c", "ac", false}, {"*a*b", "xxaxxb", true},
		{"*a*b", "xxaxxbc", false}, {"a/b*", "a/bc", true}, {"[x]", "[x]", true},
	}
	for _, c := range cases {
		if Glob(c.p, c.s) != c.ok {
			t.Errorf("Glob(%q, %q) = %v", c.p, c.s, !c.ok)
		}
	}
}
