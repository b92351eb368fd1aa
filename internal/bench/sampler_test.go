package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
)

// TestProbe checks the sampler's database half against known states: dead
// tuples left by a DELETE under a held xid, the holder named, its age
// growing, a prepared transaction found once the session is gone, WAL
// counted and the local server's CPU read.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	testkit.RequireServerVersion(t, db, 150000) // pg_stat_force_next_flush
	if _, err := db.Exec(ctx, `CREATE TABLE q (id int PRIMARY KEY); INSERT INTO q SELECT generate_series(1, 1000);
		CREATE TABLE h (x text); INSERT INTO h SELECT repeat('x', 100) FROM generate_series(1, 1000)`); err != nil {
		t.Fatal(err)
	}
	p, err := dialProbe(ctx, url, []string{"public.q", "public.h"}, []string{"public.h"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if c, _ := testkit.Shared(); c != nil && p.postmaster != c.PID() {
		t.Errorf("postmaster = %d, want %d", p.postmaster, c.PID())
	}

	hold, err := connectAs(ctx, url, AppLongrunner)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(ctx)
	if _, err := hold.Exec(ctx, "BEGIN; SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM q`, `VACUUM q`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = db.Exec(ctx, `SELECT pg_stat_force_next_flush()`)

	// Each read counts the WAL written since the one before.
	var s Sample
	var wal int64
	testkit.Until(10*time.Second, func() bool {
		s = Sample{Completed: 10}
		if err := p.read(ctx, &s); err != nil {
			t.Fatal(err)
		}
		wal += s.WALBytes
		return s.Tables["public.q"].DeadTuples >= 1000
	})
	if got := s.Tables["public.q"]; got.DeadTuples < 1000 || got.HeapBytes == 0 || got.IndexBytes == 0 {
		t.Errorf("table stats = %+v, want 1000 dead tuples VACUUM could not remove", got)
	}
	if s.DeadTuples != s.Tables["public.q"].DeadTuples {
		t.Errorf("dead tuple sum %d", s.DeadTuples)
	}
	h := s.Tables["public.h"]
	if got := s.Tables["public.q"]; got.TotalBytes < got.HeapBytes+got.IndexBytes || s.StorageBytes != got.TotalBytes+h.TotalBytes {
		t.Errorf("total bytes %d (heap %d + index %d), storage %d: want heap + indexes + TOAST, summed",
			got.TotalBytes, got.HeapBytes, got.IndexBytes, s.StorageBytes)
	}
	if h.TotalBytes == 0 || s.HistoryBytes != h.TotalBytes {
		t.Errorf("history bytes %d; want those of the history table, %d", s.HistoryBytes, h.TotalBytes)
	}
	if !strings.Contains(s.XminHolder, "idle in transaction") || !strings.Contains(s.XminHolder, AppLongrunner) {
		t.Errorf("holder = %q, want the idle session", s.XminHolder)
	}
	if wal <= 0 || s.WALBytesPerJob != float64(s.WALBytes)/10 {
		t.Errorf("WAL %d bytes over the reads, the last %d, %.1f per job", wal, s.WALBytes, s.WALBytesPerJob)
	}
	var later Sample
	testkit.WaitFor(t, "the holder's age to grow by a second", 10*time.Second, func() bool {
		later = Sample{}
		if err := p.read(ctx, &later); err != nil {
			t.Fatal(err)
		}
		return later.XminAgeS >= s.XminAgeS+1 && later.XminAge >= 1
	}, func() string {
		return fmt.Sprintf("held %.2fs then %.2fs (%d xids): the age does not grow", s.XminAgeS, later.XminAgeS, later.XminAge)
	})
	if _, err := db.Exec(ctx, `SELECT count(*) FROM generate_series(1, 3000000)`); err != nil {
		t.Fatal(err)
	}
	if err := p.read(ctx, &later); err != nil {
		t.Fatal(err)
	}
	if p.postmaster != 0 && later.PgCPUPct <= 0 {
		t.Errorf("pg cpu %.1f%%, want > 0 after a VACUUM and queries", later.PgCPUPct)
	}

	// CPU spent by a backend that has since exited still counts.
	if p.postmaster != 0 {
		burner, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := burner.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if err := p.read(ctx, &Sample{}); err != nil { // the burner is now in the baseline
			t.Fatal(err)
		}
		if _, err := burner.Exec(ctx, `SELECT count(*) FROM generate_series(1, 3000000)`); err != nil {
			t.Fatal(err)
		}
		burner.Close(ctx)
		// Its /proc entry goes when the postmaster reaps it and adds its CPU
		// to cutime and cstime.
		testkit.WaitFor(t, fmt.Sprintf("backend %d to be reaped", pid), 10*time.Second, func() bool { return procStat(pid) == nil })
		var after Sample
		if err := p.read(ctx, &after); err != nil {
			t.Fatal(err)
		}
		if after.PgCPUPct < 5 {
			t.Errorf("pg cpu %.1f%% after a backend burned CPU and exited, want it counted", after.PgCPUPct)
		}
	}

	// A prepared transaction outlives its session and holds the horizon.
	if _, err := hold.Exec(ctx, "PREPARE TRANSACTION 'bench_probe'"); err != nil {
		t.Fatal(err)
	}
	defer db.Exec(ctx, "ROLLBACK PREPARED 'bench_probe'")
	hold.Close(ctx)
	var prep Sample
	if err := p.read(ctx, &prep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(prep.XminHolder, "prepared transaction bench_probe") || prep.XminAge < 1 {
		t.Errorf("holder = %q (%d xids), want the prepared transaction", prep.XminHolder, prep.XminAge)
	}
}

// countingRotator rotates once between any two reads, and fails when told.
type countingRotator struct {
	n    int64
	fail bool
}

func (r *countingRotator) Rotations(ctx context.Context) (int64, error) {
	r.n++
	if r.fail {
		return 0, errors.New("no stats")
	}
	return r.n, nil
}

// TestRotationsAndStorage checks how per-second rotation counts and
// storage bytes become phase figures: rotations summed per phase (a failed
// read catches up on the next), storage the phase's maximum, and no
// rotations field for a strategy that does not rotate.
func TestRotationsAndStorage(t *testing.T) {
	r := &countingRotator{n: 41} // rotations before the run are not counted
	m := &sampling{cfg: &Config{}, rotator: r, phases: map[string]*phaseHists{}, t: newTracker(time.Now(), 1)}
	if d := m.readRotations(context.Background()); d != 0 {
		t.Fatalf("baseline read counted %d rotations", d)
	}
	storage := []int64{100, 300, 200, 50, 70}
	phases := []string{PhaseClean, PhaseClean, PhaseStress, PhaseStress, PhaseStress}
	for i := range storage {
		r.fail = i == 3
		m.samples = append(m.samples, Sample{Phase: phases[i], StorageBytes: storage[i], Rotations: m.readRotations(context.Background())})
	}
	if got := m.samples[3].Rotations; got != 0 {
		t.Errorf("a failed read counted %d rotations", got)
	}
	if got := m.samples[4].Rotations; got != 2 {
		t.Errorf("the read after a failed one counted %d rotations, want 2", got)
	}
	ss := m.summary([]span{{PhaseClean, 2 * time.Second}, {PhaseStress, 3 * time.Second}})
	for _, c := range []struct {
		phase   string
		rot     int64
		storage int64
	}{{PhaseClean, 2, 300}, {PhaseStress, 3, 200}} {
		ps := ss.Phases[c.phase]
		if ps.Rotations == nil || *ps.Rotations != c.rot || ps.StorageBytesMax != c.storage {
			t.Errorf("%s: rotations %v, storage max %d; want %d, %d", c.phase, ps.Rotations, ps.StorageBytesMax, c.rot, c.storage)
		}
	}
	m.rotator = nil
	ss = m.summary([]span{{PhaseClean, 2 * time.Second}})
	if ss.Phases[PhaseClean].Rotations != nil {
		t.Errorf("a strategy without rotations has a rotations figure")
	}
	b, _ := json.Marshal(ss.Phases[PhaseClean])
	if strings.Contains(string(b), "rotations") || !strings.Contains(string(b), `"storage_bytes_max":300`) {
		t.Errorf("phase JSON = %s", b)
	}
}
