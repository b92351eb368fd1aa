package millrace_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

func isDenied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// forbidden are writes no producer or worker may make: a job row with a
// chosen txid, protocol rows, TRUNCATE of a partition, the ledgers, DDL.
var forbidden = []string{
	`INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid)
	 VALUES (0, 1, 'default', 'k', '{}', 1, 0, 1, now(), '99999999'::xid8)`,
	`INSERT INTO millrace.tick (slot, queue, tick_id, prev_snap, snap, upto_txid, upto_id, more, owner, req, njobs)
	 VALUES (0, 'default', 1, '1:1:', '1:1:', '1', 1, false, 1, 1, 1)`,
	`INSERT INTO millrace.lease (slot, queue, tick_id, token, owner) VALUES (0, 'default', 1, 1, 0)`,
	`INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
	 VALUES (0, 1, 'default', 'k', '{}', 1, 0, 1, now(), now())`,
	`TRUNCATE millrace.job_0`,
	`TRUNCATE millrace.ack_1`,
	`DELETE FROM millrace.rotation`,
	`INSERT INTO millrace.rotation (id, segment) VALUES (999, 1)`,
	`DELETE FROM millrace.process`,
	`SELECT millrace.reclaim_slot(1::smallint, 0::smallint, 0::smallint)`,
	`SELECT millrace.reclaim_park(1, 1, 0::smallint)`,
	`TRUNCATE millrace.job_4`,
	`SELECT nextval('millrace.job_id_seq')`,
	`CREATE TABLE millrace.intruder (x int)`,
	`DROP TABLE millrace.finished`,
	`TRUNCATE millrace.finished_0`,
	`DROP FUNCTION millrace.claim(text, int, bigint, boolean, int, bigint, interval, boolean, int, int, interval)`,
}

// adminOnly are operator actions only millrace_admin may take.
var adminOnly = []string{`SELECT millrace.pause('default')`, `SELECT millrace.cancel(1)`, `SELECT millrace.retry(1)`,
	`SELECT millrace.set_retention('0s', '0s')`}

// TestRoles checks each role: what it must do succeeds, every other write
// fails with permission denied.
func TestRoles(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	for _, tc := range []struct {
		role    string
		allowed []string
		denied  []string
	}{
		{"millrace_producer",
			[]string{
				`SELECT millrace.enqueue('k', '{"a":1}')`,
				`SELECT millrace.enqueue('k', '{}', p_queue => 'q', p_priority => 5, p_run_at => now() + interval '1 hour')`,
				`SELECT millrace.enqueue_many('{k,k}', '{"{}","{}"}', '{default,q}', '{1,1}', '{NULL,NULL}', '{3,3}')`,
				`SELECT * FROM millrace.enqueue_unique('k', '{}', p_unique_key => 'role:1')`,
				`SELECT millrace.schema_version()`,
			},
			append([]string{
				`SELECT * FROM millrace.claim('default', 1, 1)`,
				`SELECT millrace.flush(1, 1, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')`,
				`SELECT * FROM millrace.rotate('0s')`,
				`SELECT millrace.promote()`,
				`SELECT * FROM millrace.rescue('0s')`,
				`SELECT millrace.register('x', 'h', 1)`,
				`SELECT * FROM millrace.jobs`,
				`SELECT * FROM millrace.job`,
				`SELECT millrace.set_limit('default', 3)`,
				`SELECT * FROM millrace.queue_limits()`,
			}, append(adminOnly, forbidden...)...)},
		{"millrace_worker",
			[]string{
				`SELECT millrace.enqueue('k', '{}')`,
				`SELECT count(*) FROM millrace.claim('default', 1, 1)`,
				`SELECT count(*) FROM millrace.flush(1, 1, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')`,
				`SELECT count(*) FROM millrace.rotate('1h')`,
				`SELECT millrace.promote()`,
				`SELECT count(*) FROM millrace.rescue('1h')`,
				`SELECT millrace.release(12345)`,
				`SELECT count(*) FROM millrace.jobs`,
				`SELECT * FROM millrace.queue_counts()`,
				`SELECT * FROM millrace.ring_stats()`,
				`SELECT millrace.retried_as(1)`,
				`SELECT millrace.expire_history()`,
				`SELECT * FROM millrace.retention()`,
				`SELECT millrace.set_limit('q', 3, 100, '1s')`,
				`SELECT * FROM millrace.queue_limits()`,
			},
			append([]string{`SELECT * FROM millrace.job`}, append(adminOnly, forbidden...)...)},
		{"millrace_admin",
			[]string{`SELECT count(*) FROM millrace.job`, `SELECT count(*) FROM millrace.claim('default', 1, 2)`,
				`SELECT millrace.pause('q')`, `SELECT millrace.resume('q')`, `SELECT millrace.cancel(1)`, `SELECT millrace.retry(1)`,
				`SELECT millrace.set_limit('q')`,
				`SELECT count(*) FROM millrace.history`},
			forbidden},
	} {
		t.Run(tc.role, func(t *testing.T) {
			conn, err := pgx.Connect(ctx, testkit.LoginAs(t, owner, tc.role))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, q := range tc.allowed {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Errorf("%s must be allowed: %s\n  %v", tc.role, strings.Join(strings.Fields(q), " "), err)
				}
			}
			for _, q := range tc.denied {
				if _, err := conn.Exec(ctx, q); !isDenied(err) {
					t.Errorf("%s must be denied: %s\n  got %v", tc.role, strings.Join(strings.Fields(q), " "), err)
				}
			}
		})
	}
	// A role with no grant cannot enqueue: nothing is granted to PUBLIC.
	if _, err := owner.Exec(ctx, "CREATE ROLE nobody_"+owner.Config().ConnConfig.Database+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	defer owner.Exec(ctx, "DROP ROLE nobody_"+owner.Config().ConnConfig.Database)
	u, _ := url.Parse(owner.Config().ConnString())
	u.User = url.User("nobody_" + owner.Config().ConnConfig.Database)
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT millrace.enqueue('k', '{}')`); !isDenied(err) {
		t.Fatalf("a role with no grant enqueued: %v", err)
	}
}

// TestClientUnderRoles runs the guide's flow with least privilege: a
// producer inserts (alone and in its own transaction), a worker process
// runs the jobs.
func TestClientUnderRoles(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	producerPool, err := pgxpool.New(ctx, testkit.LoginAs(t, owner, "millrace_producer"))
	if err != nil {
		t.Fatal(err)
	}
	defer producerPool.Close()
	workerPool, err := pgxpool.New(ctx, testkit.LoginAs(t, owner, "millrace_worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer workerPool.Close()

	producer, err := millrace.NewClient(producerPool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Insert(ctx, countArgs{N: 1}, nil); err != nil {
		t.Fatalf("producer Insert: %v", err)
	}
	if _, err := producer.InsertMany(ctx, []millrace.InsertManyParams{{Args: countArgs{N: 2}}, {Args: countArgs{N: 3}}}); err != nil {
		t.Fatalf("producer InsertMany: %v", err)
	}
	err = pgx.BeginFunc(ctx, producerPool, func(tx pgx.Tx) error {
		_, err := producer.InsertTx(ctx, tx, countArgs{N: 4}, &millrace.InsertOpts{RunAt: time.Now().Add(50 * time.Millisecond)})
		return err
	})
	if err != nil {
		t.Fatalf("producer InsertTx: %v", err)
	}
	s := &seen{runs: map[int]int{}}
	worker, err := millrace.NewClient(workerPool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 4}}, MaintenanceEvery: 20 * time.Millisecond, RotateAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		t.Fatalf("worker Start: %v", err)
	}
	defer worker.Stop(ctx)
	waitFor(t, "the producer's jobs to run in the worker", 20*time.Second, func() bool { return s.n.Load() >= 4 })
	waitFor(t, "the worker, as leader, to turn the ring", 20*time.Second, func() bool {
		st, err := millrace.ReadStats(ctx, workerPool)
		return err == nil && st.Reclaims >= 2
	})
}
