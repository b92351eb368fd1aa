package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestGuideRecipe: main.go, copied as it is into a module of a user's own
// (which can import no internal package of millrace) by the recipe of
// docs/guide.md, builds and runs to the end: the guide's shell block is
// run line by line, but for its git clone, with $HOME/src/millrace
// standing for the clone (a link to this tree), outside any workspace. It
// runs on a throwaway cluster of its own, or on the database DATABASE_URL
// names when the tests use one.
func TestGuideRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	for _, block := range strings.Split(string(guide), "```sh\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		if strings.Contains(body, "go mod edit -replace") {
			recipe = strings.Split(strings.TrimSpace(body), "\n")
			break
		}
	}
	if len(recipe) == 0 || !strings.HasPrefix(recipe[0], "git clone ") || recipe[len(recipe)-1] != "go run ." {
		t.Fatalf("docs/guide.md has no recipe block from `git clone` to `go run .` with `go mod edit -replace`: %q", recipe)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(home, "src", "millrace")); err != nil {
		t.Fatal(err)
	}
	// A new HOME, and the caches where they were.
	env := []string{"HOME=" + home, "GOWORK=off"}
	for _, v := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(out)))
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "DATABASE_URL" && !strings.HasPrefix(k, "GO") {
			env = append(env, kv)
		}
	}
	if os.Getenv("DATABASE_URL") != "" {
		env = append(env, "DATABASE_URL="+testkit.EmptyDBURL(t))
	}
	script := "set -e\ncd \"$HOME\"\n" + strings.Join(recipe[1:], "\n") + "\n"
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the guide's recipe failed: %v\n%s\n%s", err, script, out)
	}
	for _, want := range []string{"resizing cat.png", "resizing dog.png", "resizing owl.png", "all jobs done; stopped"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the copied quickstart's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "never.png") {
		t.Errorf("the job of the rolled-back transaction ran:\n%s", out)
	}
	gomod, err := os.ReadFile(filepath.Join(home, "app", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "github.com/millrace/millrace =>") {
		t.Errorf("the recipe's go.mod has no replace of the queue:\n%s", gomod)
	}
}
