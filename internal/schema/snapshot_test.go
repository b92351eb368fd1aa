package schema_test

import (
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.txt from a freshly migrated database")

// snapshotQueries describe the schema as the migrations leave it: every
// relation (with its partition bound), column, index, sequence, view and
// function (with its definition), in a stable order.
var snapshotQueries = []string{
	`SELECT format('relation %s %s%s', c.relname, c.relkind,
	        coalesce(' ' || pg_get_expr(c.relpartbound, c.oid), ''))
	 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE n.nspname = 'millrace' AND c.relkind IN ('r', 'p', 'v', 'S') ORDER BY 1`,
	`SELECT format('column %s.%s %s%s%s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
	        CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
	        coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''))
	 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	 WHERE n.nspname = 'millrace' AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped
	 ORDER BY c.relname, a.attnum`,
	`SELECT format('reloptions %s %s', c.relname, c.reloptions)
	 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE n.nspname = 'millrace' AND c.reloptions IS NOT NULL ORDER BY 1`,
	`SELECT 'index ' || pg_get_indexdef(i.indexrelid)
	 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE n.nspname = 'millrace' ORDER BY 1`,
	`SELECT format('view %s %s', c.relname, pg_get_viewdef(c.oid))
	 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE n.nspname = 'millrace' AND c.relkind = 'v' ORDER BY 1`,
	`SELECT pg_get_functiondef(p.oid)
	 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	 WHERE n.nspname = 'millrace' ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
	`SELECT format('comment %s(%s) %s', p.proname, pg_get_function_identity_arguments(p.oid), obj_description(p.oid, 'pg_proc'))
	 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	 WHERE n.nspname = 'millrace' ORDER BY 1`,
	// Grants, with the owner named "owner" and PUBLIC "public".
	`SELECT format('grant %s %s(%s) to %s', a.privilege_type, p.proname, pg_get_function_identity_arguments(p.oid),
	        CASE WHEN a.grantee = 0 THEN 'public' WHEN a.grantee = p.proowner THEN 'owner' ELSE a.grantee::regrole::text END)
	 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	 CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
	 WHERE n.nspname = 'millrace' ORDER BY 1`,
	`SELECT format('grant %s %s to %s', a.privilege_type, c.relname,
	        CASE WHEN a.grantee = 0 THEN 'public' WHEN a.grantee = c.relowner THEN 'owner' ELSE a.grantee::regrole::text END)
	 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
	 WHERE n.nspname = 'millrace' AND c.relkind IN ('r', 'p', 'v', 'S') AND c.relname !~ '_[0-9]+$' ORDER BY 1`,
	`SELECT format('grant %s schema millrace to %s', a.privilege_type,
	        CASE WHEN a.grantee = 0 THEN 'public' WHEN a.grantee = n.nspowner THEN 'owner' ELSE a.grantee::regrole::text END)
	 FROM pg_namespace n CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
	 WHERE n.nspname = 'millrace' ORDER BY 1`,
}

// migrated returns a pool on a fresh database migrated to the latest version.
func migrated(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.EmptyDBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := schema.Up(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	return pool
}

func snapshot(ctx context.Context, t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, q := range snapshotQueries {
		rows, _ := pool.Query(ctx, q)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			b.WriteString(strings.TrimRight(l, "\n"))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// snapshotMajor is the server major version testdata/schema.txt is
// written on.
const snapshotMajor = 15

var viewText = regexp.MustCompile(`(?s)\nview .*?\n\n`)

var maintainGrant = regexp.MustCompile(`(?m)^grant MAINTAIN [^\n]*\n`)

// withoutViewText drops the views' definitions from a snapshot.
func withoutViewText(s string) string { return viewText.ReplaceAllString(s, "\n\n") }

func serverMajor(ctx context.Context, t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var num int
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	return num / 10000
}

// TestSchemaSnapshot migrates a fresh database and compares what the
// migrations left with testdata/schema.txt: a change to the protocol's
// tables, partitions, indexes or functions shows up as a diff to review.
// `go test ./internal/schema -run TestSchemaSnapshot -update` rewrites it.
func TestSchemaSnapshot(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	got := snapshot(ctx, t, pool)
	const file = "testdata/schema.txt"
	if *update {
		if major := serverMajor(ctx, t, pool); major != snapshotMajor {
			t.Fatalf("-update on PostgreSQL %d: %s is written on %d (MILLRACE_PG=%[3]d)", major, file, snapshotMajor)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if major := serverMajor(ctx, t, pool); major != snapshotMajor {
		// pg_get_viewdef words a view differently from one major version
		// to the next (16 qualifies every column); the views' columns and
		// types are still compared.
		t.Logf("PostgreSQL %d: view definitions not compared (%s was written on %d)", major, file, snapshotMajor)
		got, want = withoutViewText(got), []byte(withoutViewText(string(want)))
		// PostgreSQL 17 added the MAINTAIN privilege, which an owner holds
		// on its tables.
		got = maintainGrant.ReplaceAllString(got, "")
	}
	if got != string(want) {
		t.Fatalf("schema differs from %s at %s\n(review the change, then run with -update)", file, firstDiff(got, string(want)))
	}
}

// Every partition of the ring has the parent's indexes and storage
// options: the partitions are made in one loop from one declaration.
func TestPartitionsMatchTheirParent(t *testing.T) {
	ctx := context.Background()
	pool := migrated(t)
	rows, _ := pool.Query(ctx, `
		SELECT format('%s: %s indexes, parent %s; options %s', c.relname,
		       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid),
		       (SELECT count(*) FROM pg_index i WHERE i.indrelid = p.oid), c.reloptions)
		FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid JOIN pg_class p ON p.oid = h.inhparent
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'millrace' AND c.relkind = 'r'
		  AND ((SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) <> (SELECT count(*) FROM pg_index i WHERE i.indrelid = p.oid)
		       OR NOT c.reloptions @> ARRAY['autovacuum_enabled=false'])`)
	bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("partitions that differ from their parent: %v", bad)
	}
	var n int
	pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
		JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = 'millrace' AND c.relkind = 'r'`).Scan(&n)
	if n != 16*4+1+2+68+68+36 {
		t.Fatalf("%d partitions; want 16 ring tables x 4 slots + the park + 2 schedule generations + 68 history buckets + 68 tally buckets + 36 buckets of completed history", n)
	}
}
