package ui_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/ui"
)

type horizonTables struct {
	Tables []struct {
		Name       string `json:"name"`
		Dead       int64  `json:"dead_tuples"`
		Live       int64  `json:"live_tuples"`
		Partitions int    `json:"partitions"`
	} `json:"tables"`
}

// The horizon page's dead tuples count a partitioned table as the sum of
// its partitions: millrace.job holds the waiting jobs, not 0 live tuples.
func TestHorizonSumsPartitions(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		if _, err := conn.Exec(ctx, "SELECT millrace.enqueue('k', '{}', p_queue => 'q')"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	conn.Release()

	policy, err := guard.ParsePolicy("p.yaml", []byte("watch_tables: [millrace.job, millrace.rotation]\n"))
	if err != nil {
		t.Fatal(err)
	}
	watched := httptest.NewServer(ui.New(pool, ui.Options{Policy: policy, PolicyName: "p.yaml"}))
	defer watched.Close()
	top := httptest.NewServer(ui.New(pool, ui.Options{}))
	defer top.Close()
	read := func(u string) horizonTables {
		code, body := get(t, u+"/api/horizon")
		var v horizonTables
		if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 {
			t.Fatalf("api/horizon: %d %s", code, body)
		}
		return v
	}
	// The statistics reach the view within a moment.
	var job struct {
		live       int64
		partitions int
	}
	waitFor(t, "millrace.job's live tuples on the horizon page (a policy's watch_tables)", func() bool {
		for _, tb := range read(watched.URL).Tables {
			if tb.Name == "millrace.job" {
				job.live, job.partitions = tb.Live, tb.Partitions
			}
		}
		return job.live >= 7
	})
	if job.partitions < 2 {
		t.Errorf("millrace.job: %d partitions, want its partitions counted", job.partitions)
	}
	partition := regexp.MustCompile(`^millrace\.[a-z_]+_[0-9]+$`)
	for _, tb := range read(top.URL).Tables {
		if partition.MatchString(tb.Name) {
			t.Errorf("a partition is listed on its own: %+v", tb)
		}
		if tb.Name == "millrace.job" && tb.Live < 7 {
			t.Errorf("millrace.job: %+v, want the live tuples of its partitions", tb)
		}
	}
}
