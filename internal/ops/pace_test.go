package ops_test

import (
	"testing"
	"time"

	"github.com/millrace/millrace/internal/ops"
)

// A read that took 100 ms at a 5% share makes the next due 2 s after it
// began; Reset makes it due at once.
func TestPacerKeepsReadsToTheirShare(t *testing.T) {
	p := ops.Pacer{Share: 0.05}
	t0 := time.Unix(1000, 0)
	if !p.Due(t0) {
		t.Fatal("the first read is not due")
	}
	p.Took(t0, 100*time.Millisecond)
	if p.Due(t0.Add(1999 * time.Millisecond)) {
		t.Error("due 1.999 s after a read of 100 ms at a 5% share")
	}
	if !p.Due(t0.Add(2 * time.Second)) {
		t.Error("not due 2 s after a read of 100 ms at a 5% share")
	}
	p.Reset()
	if !p.Due(t0) {
		t.Error("not due after Reset")
	}
}
