package schema_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// maxPositional is the most parameters a function may have for its calls
// to bind them by position.
const maxPositional = 3

// TestProtocolCallsUseNamedNotation: every call of a millrace function
// with more than maxPositional parameters that the tree's Go code sends
// (a string literal of a non-test .go file, in any module of the
// workspace) passes every argument in named notation (p_owner => $1), with
// a name the function has. Bound by position, a signature whose parameters
// are reordered (flush takes three bigint[] in a row) would bind the wrong
// arrays without an error; by name, such a call fails when it is planned.
// Parameters with a default may be left out.
func TestProtocolCallsUseNamedNotation(t *testing.T) {
	fns := functions(t)
	root := moduleRoot(t)
	calls, err := sqlCalls(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range calls {
		overloads, ok := fns[c.fn]
		if !ok {
			continue // not a function: a table or type of the schema
		}
		seen[c.fn] = true
		if c.err != "" {
			t.Errorf("%s: millrace.%s: %s", c.pos, c.fn, c.err)
			continue
		}
		most, names := 0, map[string]bool{}
		for _, o := range overloads {
			most = max(most, len(o))
			for _, n := range o {
				names[n] = true
			}
		}
		if most <= maxPositional {
			continue
		}
		var positional, named []string
		for i, a := range c.args {
			a = strings.TrimSpace(a)
			m := namedArg.FindStringSubmatch(a)
			if m == nil {
				name := "p_…"
				if len(overloads) == 1 && i < len(overloads[0]) {
					name = overloads[0][i]
				}
				positional = append(positional, strconv.Itoa(i+1))
				named = append(named, name+" => "+a)
				continue
			}
			if !names[m[1]] {
				t.Errorf("%s: millrace.%s has no parameter %s", c.pos, c.fn, m[1])
			}
		}
		if len(positional) > 0 {
			t.Errorf("%s: millrace.%s takes %d parameters, and its arguments %s are positional: name them (%s)",
				c.pos, c.fn, most, strings.Join(positional, ", "), strings.Join(named, ", "))
		}
	}
	// The scan itself: it finds the calls of the functions with the most
	// parameters (drop one here if the code stops calling it).
	for _, fn := range []string{"flush", "complete", "insert_many", "periodic_run"} {
		if !seen[fn] {
			t.Errorf("found no call of millrace.%s under %s: is the scan of the Go code broken?", fn, root)
		}
	}
}

// namedArg is an argument in named notation; its first group is the name.
var namedArg = regexp.MustCompile(`^\s*(\w+)\s*(?:=>|:=)`)

// functions maps each function of a migrated schema to its overloads,
// each the names of its input parameters in order.
func functions(t *testing.T) map[string][][]string {
	t.Helper()
	pool := migrated(t)
	rows, _ := pool.Query(context.Background(), `SELECT p.proname,
		ARRAY(SELECT coalesce(a.name, '')
			FROM unnest(p.proargnames, coalesce(p.proargmodes::text[], array_fill('i'::text, ARRAY[p.pronargs])))
				WITH ORDINALITY AS a(name, mode, n)
			WHERE a.mode IN ('i', 'b', 'v') ORDER BY a.n)
		FROM pg_proc p WHERE p.pronamespace = 'millrace'::regnamespace`)
	type fn struct {
		Name   string
		Params []string
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for _, f := range all {
		out[f.Name] = append(out[f.Name], f.Params)
	}
	if o := out["flush"]; len(o) != 1 || len(o[0]) < 20 || o[0][0] != "p_owner" {
		t.Fatalf("millrace.flush's parameters as read from pg_proc: %q", o)
	}
	return out
}

// moduleRoot is the directory of the workspace: the root module's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/millrace/millrace\n") {
		t.Fatalf("%s is not the root of module github.com/millrace/millrace: %v", root, err)
	}
	return root
}

// sqlCall is a call of millrace.fn found in a Go string literal.
type sqlCall struct {
	pos  string   // file:line
	fn   string   // the function's name
	args []string // its arguments' text, as split at top-level commas
	err  string   // why its arguments could not be read
}

// callStart is the start of a call of a function of the schema: a name
// after INTO or TABLE is a table's, followed by its column list.
var (
	callStart  = regexp.MustCompile(`(?i)\bmillrace\.(\w+)\s*\(`)
	tableBlock = regexp.MustCompile(`(?i)\b(INTO|TABLE)\s+$`)
)

// sqlCalls finds the calls of millrace functions in the string literals of
// every non-test .go file under root (testdata and hidden directories
// aside).
func sqlCalls(root string) ([]sqlCall, error) {
	var out []sqlCall
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, loc := range callStart.FindAllStringSubmatchIndex(s, -1) {
				if tableBlock.MatchString(s[:loc[0]]) {
					continue
				}
				p := fset.Position(lit.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				c := sqlCall{
					pos: fmt.Sprintf("%s:%d", rel, p.Line+strings.Count(s[:loc[0]], "\n")),
					fn:  s[loc[2]:loc[3]],
				}
				c.args, c.err = splitArgs(s[loc[1]:])
				out = append(out, c)
			}
			return true
		})
		return nil
	})
	return out, err
}

// splitArgs splits the text after a call's opening parenthesis into its
// arguments, up to the matching closing one, skipping what is inside
// quotes and nested parentheses.
func splitArgs(s string) ([]string, string) {
	var args []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], s[i])
			if j < 0 {
				return nil, "unterminated quote in its arguments"
			}
			i += j + 1
		case '(', '[':
			depth++
		case ')', ']':
			if depth > 0 {
				depth--
				continue
			}
			if s[i] == ']' {
				return nil, "unbalanced ] in its arguments"
			}
			if a := s[start:i]; strings.TrimSpace(a) != "" || len(args) > 0 {
				args = append(args, a)
			}
			return args, ""
		case ',':
			if depth == 0 {
				args = append(args, s[start:i])
				start = i + 1
			}
		}
	}
	return nil, "no closing parenthesis in the same string literal: write the call in one literal"
}

// TestSplitArgs: the scan of TestProtocolCallsUseNamedNotation splits a
// call's arguments at its own commas only, and says when it cannot read
// them.
func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		text string
		args []string
		err  bool
	}{
		{"$1, p_b => $2) FROM x", []string{"$1", " p_b => $2"}, false},
		{")", nil, false},
		{"p_args => jsonb_build_object('a', $1, 'b,)', ARRAY[$2, $3]), p_x => $4)", []string{"p_args => jsonb_build_object('a', $1, 'b,)', ARRAY[$2, $3])", " p_x => $4"}, false},
		{`$1, "odd,name" => $2)`, []string{"$1", ` "odd,name" => $2`}, false},
		{"$1, $2", nil, true},
		{"'unterminated, $1)", nil, true},
	} {
		args, err := splitArgs(c.text)
		if (err != "") != c.err || !slices.Equal(args, c.args) {
			t.Errorf("splitArgs(%q) = %q, %q", c.text, args, err)
		}
	}
}
