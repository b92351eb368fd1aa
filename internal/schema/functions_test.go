package schema_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/schema"
)

var createFunction = regexp.MustCompile(`(?i)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+millrace\.(\w+)\s*\(`)

// TestFunctionsHaveOneHome: every function of a migrated schema is defined
// exactly once under functions/ (with as many definitions of a name as it
// has overloads), no versioned migration from FunctionsSince on defines
// one, and every function has a comment.
func TestFunctionsHaveOneHome(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	rows, _ := pool.Query(ctx, `SELECT p.proname, count(*) OVER (PARTITION BY p.proname),
		coalesce(obj_description(p.oid, 'pg_proc'), '')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'millrace'`)
	type fn struct {
		Name      string
		Overloads int64
		Comment   string
	}
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]int{}
	for _, name := range schema.FunctionFiles {
		body, err := schema.Files.ReadFile("functions/" + name + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createFunction.FindAllStringSubmatch(string(body), -1) {
			defined[m[1]]++
		}
	}
	inSchema := map[string]bool{}
	for _, f := range fns {
		inSchema[f.Name] = true
		if int64(defined[f.Name]) != f.Overloads {
			t.Errorf("millrace.%s: %d definitions under functions/, %d in the schema", f.Name, defined[f.Name], f.Overloads)
		}
		if f.Comment == "" {
			t.Errorf("millrace.%s has no COMMENT ON FUNCTION", f.Name)
		}
	}
	for name := range defined {
		if !inSchema[name] {
			t.Errorf("functions/ defines millrace.%s, which the schema does not have", name)
		}
	}
	all, err := schema.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all[schema.FunctionsSince-1:] {
		if loc := createFunction.FindStringIndex(m.Up); loc != nil {
			t.Errorf("migration %d defines a function (%q): functions live in functions/", m.Version, m.Up[loc[0]:loc[1]])
		}
	}
}

// TestFunctionsFixPlanCacheMode: every PL/pgSQL function of the schema
// whose statements take parameters fixes plan_cache_mode for itself
// (force_generic_plan where it was measured to pay, else auto), so a
// role's or database's plan_cache_mode changes no plan of the protocol:
// with force_custom_plan on the session, a one-job insert_many took
// 0.94-1.13 ms against 0.64-0.66 (pgbench). current_segment and
// current_gen, whose one statement takes no parameter (always a generic
// plan), are left without the clause they would pay for at every call.
func TestFunctionsFixPlanCacheMode(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	rows, _ := pool.Query(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = 'millrace'::regnamespace AND l.lanname = 'plpgsql'
		  AND p.proname NOT IN ('current_segment', 'current_gen')
		  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'plan_cache_mode=%')
		ORDER BY 1`)
	loose, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range loose {
		t.Errorf("%s takes the session's plan_cache_mode: add SET plan_cache_mode TO 'auto' (or force_generic_plan)", f)
	}
}

// TestFunctionsChangeWithAVersion pins the hash of functions/ to the newest
// version in testdata/functions.sum. A change of the functions fails it:
// if the newest version has been released, add a migration (a binary that
// knows only the old bodies must refuse the schema, not write them back);
// then run with -update.
func TestFunctionsChangeWithAVersion(t *testing.T) {
	_, hash, err := schema.Functions()
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%d %s\n", schema.Latest(), hash)
	const file = "testdata/functions.sum"
	if *update {
		if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != line {
		t.Fatalf("functions/ changed: %s holds %q, now %q. If version %d is released, add a migration first; then run with -update",
			file, strings.TrimSpace(string(got)), strings.TrimSpace(line), schema.Latest())
	}
}

// TestMigrateAppliesChangedFunctions: Migrate applies the functions when
// the newest applied set differs from the binary's (a body edited by hand
// comes back), and not when it is the same.
func TestMigrateAppliesChangedFunctions(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	count := func() (n int) {
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.function_set").Scan(&n)
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d function sets after one migration, want 1", n)
	}
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d function sets after a second Up with the same functions, want 1", n)
	}
	if err := schema.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION millrace.history_slack() RETURNS interval LANGUAGE sql IMMUTABLE AS $$ SELECT interval '0' $$;
		INSERT INTO millrace.function_set (version, hash) VALUES (7, 'edited')`); err != nil {
		t.Fatal(err)
	}
	if err := schema.Check(ctx, pool); err == nil {
		t.Fatal("Check accepts a schema whose functions are not this binary's")
	}
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	var slack string
	pool.QueryRow(ctx, "SELECT millrace.history_slack()::text").Scan(&slack)
	if slack == "00:00:00" {
		t.Fatal("Up did not apply the functions again over an edited body")
	}
	if err := schema.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

// TestEnqueueTooLargeSaysWhich: an enqueue of one job with args over the
// limit says so without naming a position or enqueue_many; a bulk one
// names the job's position among those inserted.
func TestEnqueueTooLargeSaysWhich(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	big := `{"s":"` + strings.Repeat("x", 1<<20) + `"}`
	_, err := pool.Exec(ctx, "SELECT millrace.enqueue('k', $1::jsonb)", big)
	if err == nil || !strings.Contains(err.Error(), "millrace: args must be at most 1048576 bytes encoded (this job's are 1048585)") {
		t.Fatalf("single enqueue of large args: %v", err)
	}
	_, err = pool.Exec(ctx, "SELECT millrace.enqueue_many('{k,k}', ARRAY['{}', $1]::jsonb[], '{q,q}', '{1,1}', '{NULL,NULL}', '{3,3}')", big)
	if err == nil || !strings.Contains(err.Error(), "millrace: job 2 of the 2 inserted: args must be at most 1048576 bytes") {
		t.Fatalf("bulk enqueue of large args: %v", err)
	}
}

// TestCalledFunctionsNeverCompile: every function the roles may call (the
// SECURITY DEFINER ones, which grants.sql lists) runs with jit off. A
// statement whose estimated cost passes jit_above_cost is compiled on its
// first execution: the dashboard's sample of the last second, an ad hoc
// query over history, spent about 560 ms of server CPU compiling at each
// read, where reading its rows took 4.
func TestCalledFunctionsNeverCompile(t *testing.T) {
	pool := migrated(t)
	rows, _ := pool.Query(context.Background(), `SELECT p.proname FROM pg_proc p
		WHERE p.pronamespace = 'millrace'::regnamespace AND p.prosecdef
		  AND NOT coalesce('jit=off' = ANY (p.proconfig), false) ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(names) > 0 {
		t.Fatalf("functions the roles call without SET jit TO 'off': %v", names)
	}
}
