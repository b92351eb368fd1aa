package millrace_test

import (
	"context"
	"testing"

	"github.com/millrace/millrace"
)

// chargeArgs is a job whose argument is a 64-bit integer.
type chargeArgs struct {
	OrderID int64 `json:"order_id"`
}

func (chargeArgs) Kind() string { return "charge" }

// TestUniqueByArgsKeepsIntegersApart: jobs unique by arguments whose
// arguments differ only in a 64-bit integer a float64 cannot tell apart
// are two jobs; the same value spelled another way is one.
func TestUniqueByArgsKeepsIntegersApart(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{nil, {"order_id"}} {
		opts := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true, ArgKeys: keys}}
		for _, pair := range [][2]int64{{1234567890123456789, 1234567890123456700}, {9007199254740993, 9007199254740992}} {
			a := mustInsert(t, c, chargeArgs{pair[0]}, opts)
			b := mustInsert(t, c, chargeArgs{pair[1]}, opts)
			if a.Duplicate || b.Duplicate || a.ID == b.ID {
				t.Errorf("arg keys %v: order %d after order %d: duplicate %v of job %d (job %d)", keys, pair[1], pair[0], b.Duplicate, b.ID, a.ID)
			}
			if again := mustInsert(t, c, chargeArgs{pair[1]}, opts); !again.Duplicate || again.ID != b.ID {
				t.Errorf("arg keys %v: order %d inserted twice: job %d, then job %d (duplicate %v)", keys, pair[1], b.ID, again.ID, again.Duplicate)
			}
			if _, err := pool.Exec(ctx, "SELECT millrace.cancel(id) FROM unnest($1::bigint[]) id", []int64{a.ID, b.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One value, two spellings: one key.
	opts := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}
	a := mustInsert(t, c, rawArgs{"n", `{"n": 1.0, "m": [1e2]}`}, opts)
	b := mustInsert(t, c, rawArgs{"n", `{"m":[100],"n":1}`}, opts)
	if !b.Duplicate || b.ID != a.ID {
		t.Errorf("the same value spelled twice made two jobs: %d and %d", a.ID, b.ID)
	}
}
