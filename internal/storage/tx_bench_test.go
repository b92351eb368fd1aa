package storage

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// claimSQL is a claim through claim_start, without what it saw.
const claimSQL = `SELECT tick_id, token, id, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms, cancelled,
	key, key_slots, waits
	FROM millrace.claim_start(p_queue => $1, p_owner => $2, p_req => $3, p_retry => $4,
		p_max_jobs => $5, p_max_bytes => $6, p_starve => $7, p_start => $8, p_held => $9, p_buffer => $10,
		p_pace => $11)`

// claimImplicit is a claim as it was sent before every protocol
// transaction set its own isolation and timeouts: synchronous_commit off
// and the claim, in the pipeline's implicit transaction. For comparison
// only.
func (s *Store) claimImplicit(ctx context.Context, queue string, owner int32, req int64, lim Limits) (int, error) {
	var b pgx.Batch
	b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
	b.Queue(claimSQL, queue, owner, req, false, lim.MaxJobs, lim.MaxBytes, "5s", 0, nil, 0, nil)
	br := s.Pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return n, br.Close()
}

// BenchmarkClaim compares a claim in its own READ COMMITTED transaction
// with timeouts off (BEGIN, settings, claim, COMMIT in one pipeline: what
// Claim sends) against the former implicit transaction, alternating, from
// a queue filled with 10 jobs per claim (run with -benchtime=Nx), and from
// an empty queue (an idle poll).
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	lim := Limits{MaxJobs: 10, MaxBytes: 1 << 20}
	for _, full := range []bool{true, false} {
		name := "empty"
		if full {
			name = "10jobs"
		}
		for _, v := range []string{"rc-pipeline", "implicit"} {
			b.Run(name+"/"+v, func(b *testing.B) {
				s, pool := newStoreB(b)
				if full {
					jobs := make([]NewJob, 1000)
					for i := range jobs {
						jobs[i] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}
					}
					for n := 0; n < b.N*10; n += len(jobs) {
						if _, err := Insert(ctx, pool, jobs, false); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var err error
					if v == "implicit" {
						_, err = s.claimImplicit(ctx, "q", 1, int64(i+1), lim)
					} else {
						_, err = s.Claim(ctx, "q", 1, int64(i+1), false, lim)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkClaimOverhead alternates the two forms of an empty claim call
// by call, so that the load of the machine weighs on both alike, and
// reports each one's mean time per call (ns/claim-rc, ns/claim-implicit).
func BenchmarkClaimOverhead(b *testing.B) {
	ctx := context.Background()
	lim := Limits{MaxJobs: 10, MaxBytes: 1 << 20}
	s, _ := newStoreB(b)
	var rc, implicit time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := s.Claim(ctx, "q", 1, int64(2*i+1), false, lim); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.claimImplicit(ctx, "q", 1, int64(2*i+2), lim); err != nil {
			b.Fatal(err)
		}
		rc += t1.Sub(t0)
		implicit += time.Since(t1)
	}
	b.ReportMetric(float64(rc.Nanoseconds())/float64(b.N), "ns/claim-rc")
	b.ReportMetric(float64(implicit.Nanoseconds())/float64(b.N), "ns/claim-implicit")
}
