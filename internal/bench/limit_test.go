package bench

import (
	"testing"
	"time"
)

// TestParseLimit: --limit's forms, their defaults, and the refusals.
func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{
		"":                                 {},
		"running=40":                       {Running: 40},
		"rate=100/1s,running=2":            {Running: 2, Rate: 100, Per: time.Second},
		"per-key=2":                        {PerKey: 2, Key: "customer_id", Keys: 1000},
		"per-key=3,key=a,keys=7":           {PerKey: 3, Key: "a", Keys: 7},
		"key-rate=100/1s,keys=2,hot=50000": {KeyRate: 100, KeyPer: time.Second, Key: "customer_id", Keys: 2, Hot: 50000},
	} {
		got, err := ParseLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"running=0", "rate=100", "per-key=0", "key=a", "keys=3", "per-key=2,key=", "per-key=2,keys=0",
		"per-key=1,per-key=2", "per-key=2,key=a\"b", "size=3", "key-rate=100", "key-rate=5/1ms", "hot=10", "key-rate=1/1s,hot=0",
		"key-rate=1/1s,key-rate=2/1s"} {
		if l, err := ParseLimit(bad); err == nil {
			t.Errorf("ParseLimit(%q) = %+v; want an error", bad, l)
		}
	}
	l := Limit{PerKey: 2, Key: "c", Keys: 10}
	if l.KeyOf(25) != 6 || l.KeyOf(30) != 1 || (Limit{}).KeyOf(25) != 0 {
		t.Errorf("KeyOf: %d %d %d; want 6 1 0", l.KeyOf(25), l.KeyOf(30), (Limit{}).KeyOf(25))
	}
	if s := l.String(); s != "per-key=2,key=c,keys=10" {
		t.Errorf("String() = %q", s)
	}
	l = Limit{KeyRate: 5, KeyPer: time.Minute, Key: "c", Keys: 10, Hot: 7}
	if l.KeyOf(-3) != HotKey || l.KeyOf(25) != 6 {
		t.Errorf("KeyOf under a per-key rate: %d %d; want %d 6", l.KeyOf(-3), l.KeyOf(25), HotKey)
	}
	if s := l.String(); s != "key-rate=5/1m0s,key=c,keys=10,hot=7" {
		t.Errorf("String() = %q", s)
	}
}
