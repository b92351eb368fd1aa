package millrace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLeanModule: a program that imports only the queue package adds pgx
// and little else to its module graph. The binary, the bench, the charts,
// the guard, the dashboard and the metrics live in modules of their own.
// The baseline is a program importing only pgx: go list -m all lists
// pgx's own test dependencies too (testify, and yaml through it).
func TestLeanModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy")
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	graph := func(imp string) map[string]bool {
		write("go.mod", "module example.com/app\n\ngo 1.26.8\n\nrequire github.com/millrace/millrace v0.0.0\n\nreplace github.com/millrace/millrace => "+root+"\n")
		write("main.go", "package main\n\nimport _ \""+imp+"\"\n\nfunc main() {}\n")
		os.Remove(filepath.Join(dir, "go.sum"))
		run("mod", "tidy")
		mods := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(run("list", "-m", "all")), "\n")[1:] {
			mods[strings.Fields(line)[0]] = true
		}
		return mods
	}
	pgx := graph("github.com/jackc/pgx/v5/pgxpool")
	ours := graph("github.com/millrace/millrace")
	var added []string
	for m := range ours {
		if !pgx[m] {
			added = append(added, m)
		}
	}
	slices.Sort(added)
	t.Logf("modules a program importing only the queue adds to pgx's: %v", added)
	heavy := regexp.MustCompile(`gonum|prometheus|yaml|hdrhistogram|chromedp|riverqueue`)
	for m := range ours {
		if heavy.MatchString(m) && !pgx[m] {
			t.Errorf("importing only github.com/millrace/millrace brings %s", m)
		}
		if regexp.MustCompile(`gonum|prometheus|hdrhistogram|chromedp|riverqueue`).MatchString(m) {
			t.Errorf("%s is in the module graph", m)
		}
	}
	if len(added) > 3 {
		t.Errorf("importing only github.com/millrace/millrace adds %d modules to pgx's: %v", len(added), added)
	}
}
