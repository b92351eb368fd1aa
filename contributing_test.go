package millrace_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContributingMap keeps docs/contributing.md true: every package
// directory of the repository, and every function defined under
// internal/schema/functions/ (with the file that defines it), appears in
// it, and every path it names in backquotes exists. Like the dead-tuple
// budget, the doc is the source the test reads.
func TestContributingMap(t *testing.T) {
	doc, err := os.ReadFile("docs/contributing.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)

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
	for dir := range dirs {
		if !strings.Contains(text, "| `"+dir+"` |") {
			t.Errorf("package directory %s is not in docs/contributing.md's table of package directories", dir)
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
