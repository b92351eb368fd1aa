package pool

import (
	"testing"

	"github.com/millrace/millrace/internal/storage"
)

// TestKeyGateParksBeyondTheSlots: a key's jobs beyond the process's slots
// of it wait, in order, and each job of the key that ends hands its slot
// to the oldest waiting one; a key is forgotten once none of its jobs is
// in hand, and another key is not held back by it.
func TestKeyGateParksBeyondTheSlots(t *testing.T) {
	var g keyGate
	job := func(id int64, key string) item { return item{job: storage.Job{ID: id, Key: key}} }
	for range 3 {
		g.claimed("a", 1)
	}
	g.claimed("b", 1)
	if !g.begin(job(1, "a")) {
		t.Fatal("the first job of key a did not begin with a free slot")
	}
	if g.begin(job(2, "a")) || g.begin(job(3, "a")) {
		t.Fatal("a job of key a began beyond its one slot")
	}
	if !g.begin(job(4, "b")) {
		t.Fatal("key b was held back by key a")
	}
	for _, want := range []int64{2, 3} {
		next, ok := g.end("a")
		if !ok || next.job.ID != want {
			t.Fatalf("end of a job of key a handed on %v, %v; want job %d", next.job.ID, ok, want)
		}
	}
	if _, ok := g.end("a"); ok {
		t.Fatal("a job was handed on with none waiting")
	}
	if _, ok := g.keys["a"]; ok {
		t.Fatal("key a is still kept with none of its jobs in hand")
	}
	g.claimed("b", 1) // a cancelled job: counted in and out
	g.drop("b")
	if _, ok := g.end("b"); ok || len(g.keys) != 0 {
		t.Fatalf("keys left: %v", g.keys)
	}
}
