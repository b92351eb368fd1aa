// Command quickstart is the user guide's example program: it migrates the
// schema, starts a client, enqueues jobs three ways (Insert, InsertTx in a
// transaction that rolls back and one that commits, and SQL), works them,
// and stops gracefully.
//
//	go run ./examples/quickstart                  # on a throwaway cluster
//	DATABASE_URL=postgres://... go run ./examples/quickstart
//
// It imports only public packages, so it can be copied into a module of
// your own as it is. Without DATABASE_URL it starts a throwaway cluster
// with package pgcluster, which needs the PostgreSQL server binaries
// (apt-get install postgresql); with DATABASE_URL it uses that database.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/millracetest/pgcluster"
)

// ResizeArgs are the arguments of an image-resize job.
type ResizeArgs struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

// Kind names the job kind.
func (ResizeArgs) Kind() string { return "resize" }

func main() {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		cluster, err := pgcluster.Start(ctx, pgcluster.Options{})
		if err != nil {
			log.Fatal(err)
		}
		defer cluster.Stop()
		url = cluster.URL("postgres")
		fmt.Println("started a throwaway PostgreSQL on port", cluster.Port)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := millrace.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}

	var wg sync.WaitGroup
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[ResizeArgs]) error {
		defer wg.Done()
		fmt.Printf("job %d: resizing %s to %dpx\n", job.ID, job.Args.Image, job.Args.Width)
		return nil
	}))
	client, err := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 4}},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}

	wg.Add(3)
	// 1. A plain insert, committed at once.
	if _, err := client.Insert(ctx, ResizeArgs{Image: "cat.png", Width: 640}, nil); err != nil {
		log.Fatal(err)
	}
	// 2. Inside a transaction: rolled back, the job never exists...
	tx, _ := pool.Begin(ctx)
	client.InsertTx(ctx, tx, ResizeArgs{Image: "never.png", Width: 1}, nil)
	tx.Rollback(ctx)
	// ...committed, it runs.
	tx, _ = pool.Begin(ctx)
	client.InsertTx(ctx, tx, ResizeArgs{Image: "dog.png", Width: 320}, nil)
	tx.Commit(ctx)
	// 3. From SQL, as any language would.
	if _, err := pool.Exec(ctx, `SELECT millrace.enqueue(p_kind => 'resize', p_args => '{"image":"owl.png","width":128}')`); err != nil {
		log.Fatal(err)
	}

	wg.Wait()
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("all jobs done; stopped")
}
