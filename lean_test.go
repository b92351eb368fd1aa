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
// and little else to its module graph, and builds pgx and the cron parser
// only. The binary, the bench, the charts,
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
	// What the module's requirements may add to the graph, each for a
	// reason; a program builds only the first two (checked below).
	allowed := map[string]string{
		"github.com/millrace/millrace": "the queue",
		"github.com/robfig/cron/v3":    "periodic jobs' schedules",
		"go.uber.org/goleak":           "the queue's own tests",
		"github.com/ulikunitz/xz":      "millracetest/pgcluster unpacking a fetched server build",
	}
	for _, m := range added {
		if allowed[m] == "" {
			t.Errorf("importing only github.com/millrace/millrace adds %s to the module graph", m)
		}
	}
	built := map[string]bool{}
	for _, m := range strings.Fields(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")) {
		built[m] = true
	}
	for m := range built {
		if !pgx[m] && m != "example.com/app" && m != "github.com/millrace/millrace" && m != "github.com/robfig/cron/v3" {
			t.Errorf("a program importing only github.com/millrace/millrace builds %s", m)
		}
	}
}
