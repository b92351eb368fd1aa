package millrace_test

import (
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestContributingMap keeps docs/contributing.md true: every package
// directory of the repository has a row in its table of package
// directories, every row a package, marked a module when it has a go.mod
// and saying what its package doc says (docSentence); every function
// defined under internal/schema/functions/ appears on the row of the file
// that defines it; every path it names in backquotes exists. Like the
// dead-tuple budget, the doc is the source the test reads; it is the one
// map of the packages (README.md and docs/architecture.md link to it).
func TestContributingMap(t *testing.T) {
	page, err := os.ReadFile("docs/contributing.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)

	// Package directories: every directory holding .go files, outside
	// testdata and hidden directories.
	dirs := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			dirs[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	packages := packageRows(t, text)
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if _, ok := packages[dir]; !ok {
			t.Errorf("package directory %s is not in docs/contributing.md's table of package directories", dir)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(packages)) {
		row := packages[dir]
		if !dirs[dir] {
			t.Errorf("docs/contributing.md's table of package directories names %s, which holds no Go package", dir)
			continue
		}
		_, err := os.Stat(filepath.Join(dir, "go.mod"))
		if module := err == nil; row.module != module {
			t.Errorf("docs/contributing.md's row of %s: module column %t, want %t (whether it has a go.mod)", dir, row.module, module)
		}
		synopsis, err := packageSynopsis(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if full, head := docSentence(synopsis); row.what != full && row.what != head {
			t.Errorf("docs/contributing.md's row of %s does not say what its package doc says.\n row: %s\n doc: %s\nThe row must be the doc's first sentence after \"Package name\" (or \"Command name\"), or that sentence's part before its first colon: %q",
				dir, row.what, synopsis, head)
		}
	}

	// Functions: each listed on its file's row.
	def := regexp.MustCompile(`(?i)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+millrace\.(\w+)\s*\(`)
	files, err := filepath.Glob("internal/schema/functions/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no function files: %v", err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if f, rest, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` | "); ok && strings.HasPrefix(line, "| `internal/schema/functions/") {
			rows[f] = rest
		}
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		row, ok := rows[filepath.ToSlash(f)]
		if !ok {
			t.Errorf("%s has no row in docs/contributing.md's table of functions", f)
			continue
		}
		for _, m := range def.FindAllStringSubmatch(string(body), -1) {
			if !strings.Contains(row, "`"+m[1]+"`") {
				t.Errorf("millrace.%s (defined in %s) is not on that file's row of docs/contributing.md", m[1], f)
			}
		}
	}

	// Paths named in backquotes exist.
	path := regexp.MustCompile("`((?:internal|cmd|docs|ui|guard|bench|examples|millraceprom|millracetest|sqlcomment)/[A-Za-z0-9_./-]*)`")
	for _, m := range path.FindAllStringSubmatch(text, -1) {
		p := strings.TrimSuffix(m[1], "/")
		if strings.ContainsAny(p, "*") || strings.Contains(p, "NNN") {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("docs/contributing.md names %s, which does not exist", m[1])
		}
	}
}

// packageRow is a row of docs/contributing.md's table of package
// directories.
type packageRow struct {
	module bool   // its module column says *module*
	what   string // its description, backquotes and repeated spaces aside
}

// packageRows reads the table of package directories of docs/contributing.md
// (text): | `dir` | *module* or nothing | description |.
func packageRows(t *testing.T, text string) map[string]packageRow {
	t.Helper()
	_, section, ok := strings.Cut(text, "\n## Package directories\n")
	if !ok {
		t.Fatal(`docs/contributing.md has no "## Package directories" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]packageRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cells) != 3 || (cells[1] != "" && cells[1] != "*module*") {
			t.Errorf("docs/contributing.md: a row of package directories is not | `dir` | *module* or nothing | description |: %s", line)
			continue
		}
		dir := strings.Trim(cells[0], "`")
		if _, dup := rows[dir]; dup {
			t.Errorf("docs/contributing.md names %s in two rows of package directories", dir)
		}
		rows[dir] = packageRow{module: cells[1] == "*module*", what: plain(cells[2])}
	}
	return rows
}

// packageSynopsis is the first sentence of the package doc comment of the
// package in dir (its non-test files), as go doc shows it.
func packageSynopsis(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	var docs []string
	name := ""
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", err
		}
		name = f.Name.Name
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	if len(docs) != 1 {
		return "", fmt.Errorf("package %s has %d package doc comments, want 1", name, len(docs))
	}
	synopsis := new(doc.Package).Synopsis(docs[0])
	subject := "Package " + name + " "
	if name == "main" {
		subject = "Command "
	}
	if !strings.HasPrefix(synopsis, subject) {
		return "", fmt.Errorf("the doc comment of package %s does not begin %q: %q", name, subject, synopsis)
	}
	return synopsis, nil
}

// docSentence gives the two descriptions a row of the table may have for a
// package whose doc comment's first sentence is synopsis: that sentence
// after "Package name" or "Command name", without its final period (full),
// and the part of it before its first colon (head).
func docSentence(synopsis string) (full, head string) {
	_, full, _ = strings.Cut(plain(synopsis), " ")                // the subject's "Package" or "Command"
	_, full, _ = strings.Cut(full, " ")                           // its name
	full = strings.TrimSuffix(strings.TrimSuffix(full, "."), ":") // a sentence that introduces a list ends in a colon
	head, _, _ = strings.Cut(full, ": ")
	return full, head
}

// plain is text without backquotes, its spaces collapsed.
func plain(text string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(text, "`", "")), " ")
}
