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

// TestCopyable: main.go, copied as it is into a module of a user's own
// (which can import no internal package of millrace), builds and runs to
// the end: on a throwaway cluster of its own, or on the database
// DATABASE_URL names when the tests use one.
func TestCopyable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", string(src))
	write("go.mod", "module example.com/app\n\ngo 1.26.8\n\nrequire github.com/millrace/millrace v0.0.0\n\nreplace github.com/millrace/millrace => "+root+"\n")
	gocmd := func(args ...string) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a copy of examples/quickstart: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gocmd("mod", "tidy")
	bin := filepath.Join(dir, "quickstart")
	gocmd("build", "-o", bin, ".")

	cmd := exec.Command(bin)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	if os.Getenv("DATABASE_URL") != "" {
		env = append(env, "DATABASE_URL="+testkit.EmptyDBURL(t))
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the copied quickstart failed: %v\n%s", err, out)
	}
	for _, want := range []string{"resizing cat.png", "resizing dog.png", "resizing owl.png", "all jobs done; stopped"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the copied quickstart's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "never.png") {
		t.Errorf("the job of the rolled-back transaction ran:\n%s", out)
	}
}
