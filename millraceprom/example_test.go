package millraceprom_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/millraceprom"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// exampleDatabase gives the example a pool on a fresh database at the
// current schema.
var exampleDatabase = testkit.ExampleDB

type ResizeArgs struct {
	Image string `json:"image"`
}

func (ResizeArgs) Kind() string { return "resize" }

// A client with metrics: Instrument the Config, Attach the client, and
// serve the registry (here read directly).
func Example() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	reg := prometheus.NewRegistry()
	metrics, err := millraceprom.New(reg, nil)
	if err != nil {
		panic(err)
	}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[ResizeArgs]) error {
		return nil
	}))
	client, err := millrace.NewClient(pool, metrics.Instrument(millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{"images": {MaxWorkers: 2}},
	}))
	if err != nil {
		panic(err)
	}
	detach := metrics.Attach(client, pool) // before Start: no outcome is missed
	completedEvents, unsubscribe := client.Subscribe(millrace.EventCompleted)
	defer unsubscribe()
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	for _, img := range []string{"a.png", "b.png", "c.png"} {
		if _, err := client.Insert(ctx, ResizeArgs{Image: img}, &millrace.InsertOpts{Queue: "images"}); err != nil {
			panic(err)
		}
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A real program serves reg with
	// http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
	// Here: wait for the three outcomes, then stop and read.
	for range 3 {
		<-completedEvents
	}
	if err := client.Stop(stopCtx); err != nil {
		panic(err)
	}
	detach() // every event received is counted

	fams, _ := reg.Gather()
	for _, f := range fams {
		switch f.GetName() {
		case "millrace_jobs_inserted_total", "millrace_job_outcomes_total", "millrace_job_wait_seconds":
			for _, m := range f.GetMetric() {
				v := m.GetCounter().GetValue()
				if h := m.GetHistogram(); h != nil {
					v = float64(h.GetSampleCount())
				}
				if v > 0 {
					fmt.Printf("%s%s %v\n", f.GetName(), labels(m.GetLabel()), v)
				}
			}
		}
	}
	// Output:
	// millrace_job_outcomes_total{kind="resize",outcome="completed",queue="images"} 3
	// millrace_job_wait_seconds{kind="resize",queue="images"} 3
	// millrace_jobs_inserted_total{kind="resize",queue="images"} 3
}

// labels formats labels as the text exposition does.
func labels(ls []*dto.LabelPair) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}
