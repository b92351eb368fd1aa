package millrace

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestCanonicalNumberKeepsFloatKeys: a number that encoding/json writes for
// a float64 is written the same way (so unique keys made before numbers
// were kept exact do not change for them), and numbers a float64 cannot
// tell apart keep distinct encodings.
func TestCanonicalNumberKeepsFloatKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	floats := []float64{1, -1, 640, 1.5, 0.1, 1e21, 1e20, 123456789e15, 1e-6, 1e-7, 1.5e-7, 9007199254740992, math.MaxFloat64,
		math.SmallestNonzeroFloat64, 0.000001234, 12.5e30}
	for i := 0; i < 20000; i++ {
		switch i % 3 {
		case 0:
			floats = append(floats, math.Float64frombits(r.Uint64()))
		case 1:
			floats = append(floats, float64(r.Int64N(1<<53))*math.Pow(10, float64(r.IntN(60)-30)))
		default:
			floats = append(floats, float64(r.IntN(100000))/float64(1+r.IntN(1000)))
		}
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		b, _ := json.Marshal(f)
		got, err := canonicalNumber(string(b))
		if err != nil || got != string(b) {
			t.Fatalf("canonicalNumber(%s) = %q, %v; want %s", b, got, err, b)
		}
		// Another spelling of the same value: the same encoding.
		other := strconv.FormatFloat(f, 'e', -1, 64)
		if got2, err := canonicalNumber(other); err != nil || got2 != got {
			t.Fatalf("canonicalNumber(%s) = %q, %v; want %s (as %s)", other, got2, err, got, b)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"1234567890123456700", "1234567890123456700"}, {"1234567890123456789", "1234567890123456789"},
		{"9007199254740993", "9007199254740993"}, {"-0", "0"}, {"0.0e10", "0"}, {"1.0", "1"}, {"100e-2", "1"},
		{"0.10000000000000000001", "0.10000000000000000001"}, {"1e400", "1e+400"}, {"-12345678901234567890123", "-1.2345678901234567890123e+22"},
	} {
		if got, err := canonicalNumber(c.in); err != nil || got != c.want {
			t.Errorf("canonicalNumber(%s) = %q, %v; want %s", c.in, got, err, c.want)
		}
	}
}
