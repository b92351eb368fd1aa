package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkLimitedCycle is a batch's round through the protocol on a
// quiet server, one at a time: the insert of its jobs (keys spread over
// 1,000 values), a claim that takes and starts them all (claim_start,
// asking for up to 1,000 as the pool does) and the flush of their
// outcomes, for a queue without limits and with the limits of the
// bench's cost runs (issue 34: what a limit costs over the same queue
// without it; the running limit high enough not to bind), with batches
// of 1 and of 100 jobs. The
// server's CPU per job (server-cpu-µs/job: every postgres process of the
// machine, so run it alone) is the figure to compare between variants and
// trees, alternating them; wall times are noisier.
func BenchmarkLimitedCycle(b *testing.B) {
	for _, v := range []struct {
		name string
		lim  Limit
	}{
		{"none", Limit{}},
		{"running", Limit{Running: 1000}},
		{"per-key", Limit{PerKey: 2, Key: []string{"args.customer_id"}}},
		{"both", Limit{Running: 1000, PerKey: 2, Key: []string{"args.customer_id"}}},
	} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/%d", v.name, batch), func(b *testing.B) {
				limitedCycle(b, v.name != "none", v.lim, batch)
			})
		}
	}
}

func limitedCycle(b *testing.B, limited bool, lim Limit, batch int) {
	ctx := context.Background()
	s, pool := newStoreB(b)
	owner, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	if limited {
		if err := SetLimit(ctx, pool, "q", lim); err != nil {
			b.Fatal(err)
		}
	}
	jobs := make([]NewJob, batch)
	cpu0 := serverCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range jobs {
			c := (i*batch + k) % 1000
			jobs[k] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{"customer_id":` + strconv.Itoa(c) + `}`), Priority: 1, MaxAttempts: 3}
		}
		if _, err := Insert(ctx, pool, jobs, false); err != nil {
			b.Fatal(err)
		}
		held := 0
		bs, err := s.Claim(ctx, "q", owner, int64(i+1), false, Limits{MaxJobs: 1000, MaxBytes: 1 << 20, Start: 1000, Held: &held})
		if err != nil {
			b.Fatal(err)
		}
		var acks []Ack
		for _, x := range bs {
			for k := range x.Jobs {
				acks = append(acks, Ack{Batch: x, Job: &x.Jobs[k], State: AckCompleted, Started: time.Now(), Finished: time.Now()})
			}
		}
		if len(acks) != batch {
			b.Fatalf("claim %d took %d jobs; want %d", i, len(acks), batch)
		}
		if _, err := s.Flush(ctx, owner, int64(i+1), false, acks, bs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((serverCPU()-cpu0).Microseconds())/float64(b.N*batch), "server-cpu-µs/job")
}

// serverCPU is the user and system CPU time of the machine's postgres
// processes (Linux: /proc; 0 elsewhere): a server's work, not its waits.
func serverCPU() time.Duration {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte("(postgres)")) {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}
