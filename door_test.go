package millrace_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// statementText matches a string literal that starts, after optional
// white space, with an SQL keyword in statement position: the text of a
// statement, or the head of one built from pieces ("LISTEN "+channel).
var statementText = regexp.MustCompile(`(?i)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|LISTEN|UNLISTEN|NOTIFY|SET|SHOW|BEGIN|LOCK|CALL|TRUNCATE|COPY|VALUES|EXPLAIN|COMMIT|ROLLBACK|VACUUM|ANALYZE|GRANT|REVOKE|DROP|CREATE|ALTER)\b`)

// outsideTheDoor lists the directories of the queue's module (the root
// go.mod) that may hold statement text, and why. Every other directory of
// the module is scanned; a directory with a go.mod of its own is another
// module and is not.
var outsideTheDoor = map[string]string{
	"internal/storage":       "the door: every statement of the queue",
	"internal/schema":        "the migrator: DDL, the migration ledger and its advisory lock",
	"internal/testkit":       "the test kit (and testkit/clientkit): starts servers, creates and drops databases, seeds tests as SQL users would",
	"millracetest/pgcluster": "server harness: starts throwaway clusters and waits for their standbys",
	"examples":               "user programs: they show the SQL API (millrace.enqueue) as a user calls it",
	"testdata":               "fixtures, not code",
}

// TestStorageIsTheOneDoor (issue 32, acceptance 2): outside internal/storage,
// the queue's code sends no statement of its own. It scans every non-test
// .go file of the queue's module — the root package, every package under
// internal/ (cmdline, maint, notifier, ops, pool, session, testsignal, and
// any added later), millracetest and sqlcomment — except the directories
// outsideTheDoor lists (internal/storage, the door; internal/schema, the
// migrator; the test kit internal/testkit and the server harness
// millracetest/pgcluster; the examples, which show users the SQL API),
// and fails on every string literal that starts with an SQL keyword in
// statement position (statementText): such a statement belongs in a
// function of internal/storage that returns structured rows, which its
// callers call.
//
// The other modules of the workspace are out of its scope, as River keeps
// raw SQL outside its driver to its CLI, tests and bench: cmd/millrace (the
// CLI: its own checks of a server before it connects the queue), ui (the
// dashboard: the horizon page reads pg_stat tables; its queue reads go
// through internal/ops), guard (the horizon watcher reads and acts on
// pg_stat_activity and replication slots, not the queue), millraceprom
// (reads the ring's sizes from the catalog), internal/bench and
// bench/river (they drive other queues' SQL by design).
// docs/contributing.md says the same.
func TestStorageIsTheOneDoor(t *testing.T) {
	scanned := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == "." {
				return nil
			}
			if _, skip := outsideTheDoor[filepath.ToSlash(path)]; skip || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		scanned[filepath.ToSlash(path)] = true
		for _, s := range statementsIn(t, path) {
			t.Errorf("%s: statement text outside internal/storage (add a function to internal/storage and call it): %s", s.pos, s.text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk saw the code it guards, and the match finds statements
	// where they are.
	for _, f := range []string{"inspect.go", "insert.go", "internal/ops/ops.go", "internal/notifier/notifier.go",
		"internal/session/session.go", "internal/maint/round.go", "internal/pool/claimer.go", "millracetest/millracetest.go"} {
		if !scanned[f] {
			t.Errorf("%s was not scanned", f)
		}
	}
	if n := len(statementsIn(t, "internal/storage/reads.go")); n < 5 {
		t.Errorf("found %d statements in internal/storage/reads.go; want its reads (the match is broken)", n)
	}
}

type statement struct {
	pos  token.Position
	text string
}

// statementsIn lists the string literals of file that statementText
// matches, with their first line.
func statementsIn(t *testing.T, file string) []statement {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []statement
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
		}
		if statementText.MatchString(s) {
			line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
			out = append(out, statement{fset.Position(lit.Pos()), line})
		}
		return true
	})
	return out
}
