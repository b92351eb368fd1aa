package native

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestEachJobOnce puts jobs in by single inserts and COPY while workers run,
// and checks every job is worked exactly once and nothing remains.
func TestEachJobOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s := &Strategy{}
	if err := s.Setup(ctx, url); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	runs := map[int64]int{}
	claims := 0
	env := bench.Env{URL: url, Workers: 8,
		Handle: func(ctx context.Context, j bench.Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			return nil
		},
		ObserveClaim: func(d time.Duration, n int) { mu.Lock(); claims++; mu.Unlock() },
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.Work(wctx, env) }()
	const n = 3000
	var batch []bench.Job
	for i := int64(0); i < n; i++ {
		j := bench.Job{ID: i, Payload: []byte(`{"x":1}`)}
		if i%3 == 0 {
			if err := s.Enqueue(ctx, []bench.Job{j}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		batch = append(batch, j)
		if len(batch) == 500 {
			if err := s.Enqueue(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if err := s.Enqueue(ctx, batch); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(runs)
		mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d jobs ran", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the last acks flush
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for id, c := range runs {
		if c != 1 {
			t.Fatalf("job %d ran %d times", id, c)
		}
	}
	if claims == 0 {
		t.Fatal("no claim was observed")
	}
	rem, err := s.Remaining(ctx)
	if err != nil || len(rem) != 0 {
		t.Fatalf("Remaining = %v, %v; want none", rem, err)
	}
}
