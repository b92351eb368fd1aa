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

// TestKeyGateAdmitsInTheClaimsOrder: the claimer counts each job in as it
// hands the claim's jobs out, so a job that waits for a slot of its key
// never takes the slot of one the claim gave a slot (and marked started),
// whichever worker gets to its job first; one that waits starts at once
// only when a slot is free and none waits before it.
func TestKeyGateAdmitsInTheClaimsOrder(t *testing.T) {
	var g keyGate
	job := func(id int64, waits bool) item {
		return item{job: storage.Job{ID: id, Key: "a", KeySlots: 2, KeyWaits: waits}}
	}
	for range 4 {
		g.claimed("a", 2)
	}
	if !g.admit(job(1, false)) || !g.admit(job(2, false)) {
		t.Fatal("a job the claim gave a slot did not start")
	}
	if g.admit(job(3, true)) || g.admit(job(4, true)) {
		t.Fatal("a job that waits started beyond the key's two slots")
	}
	if next, ok := g.end("a"); !ok || next.job.ID != 3 {
		t.Fatalf("the end of a job handed on %d, %v; want the first that waits, 3", next.job.ID, ok)
	}
	// A slot free and nothing parked before it: a job that waits starts.
	g.claimed("a", 2)
	if _, ok := g.end("a"); !ok { // job 4 takes the freed slot
		t.Fatal("job 4 was not handed on")
	}
	if _, ok := g.end("a"); ok { // a slot is free now, nothing parked
		t.Fatal("a job was handed on with none waiting")
	}
	if !g.admit(job(5, true)) {
		t.Fatal("a job that waits did not start in a free slot with none waiting before it")
	}
}
