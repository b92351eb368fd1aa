package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/millrace/millrace/cmd/millrace/internal/modproxy"
)

// TestInstallFromProxy: `go install github.com/millrace/millrace/cmd/millrace@latest`,
// as the README says, works once the modules are published. The tree's
// modules are served, at the version they require of one another, from a
// file:// module proxy (other modules come from the machine's own proxy,
// through its module cache); the install runs outside the workspace
// (GOWORK=off), in an empty module cache, and the binary it installs runs.
// A program that requires the published root module alone links nothing
// of the bench, the charts, the metrics, the dashboard or River.
func TestInstallFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command from a module proxy")
	}
	root, err := modproxy.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	w, err := modproxy.Read(root)
	if err != nil {
		t.Fatal(err)
	}
	version, errs := w.Version()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	if err := w.Serve(proxy, version); err != nil {
		t.Fatal(err)
	}
	env, err := w.Env(proxy)
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(tmp, "bin")
	// An empty module cache (writable, so that the test can remove it),
	// and the binary in a directory of the test's.
	env = append(env, "GOFLAGS=-modcacherw", "GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOBIN="+gobin)
	gocmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	outside := filepath.Join(tmp, "elsewhere") // no go.mod, no go.work above
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}

	gocmd(outside, "install", "-trimpath", "github.com/millrace/millrace/cmd/millrace@latest")
	bin := filepath.Join(gobin, "millrace")
	out := gocmd(outside, "version", "-m", bin)
	for _, want := range []string{
		"mod\tgithub.com/millrace/millrace/cmd/millrace\t" + version,
		"dep\tgithub.com/millrace/millrace\t" + version,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the installed binary's build info lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=>") {
		t.Errorf("the installed binary was built with a replaced module:\n%s", out)
	}
	help, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "migrate") {
		t.Errorf("the installed millrace help: %v\n%s", err, help)
	}

	// A program of a user's, requiring the published root module.
	app := filepath.Join(tmp, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":  fmt.Sprintf("module example.com/app\n\ngo %s\n\nrequire github.com/millrace/millrace %s\n", w.Modules["."].Go.Version, version),
		"main.go": "package main\n\nimport _ \"github.com/millrace/millrace\"\n\nfunc main() {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gocmd(app, "mod", "tidy")
	deps := strings.Fields(gocmd(app, "list", "-deps", "."))
	heavy := regexp.MustCompile(`gonum|prometheus|hdrhistogram|chromedp|riverqueue|millrace/(guard|ui|millraceprom|internal/bench)`)
	if i := slices.IndexFunc(deps, heavy.MatchString); i >= 0 {
		t.Errorf("a program importing only github.com/millrace/millrace %s links %s", version, deps[i])
	}
	if !slices.Contains(deps, "github.com/millrace/millrace") {
		t.Errorf("go list -deps of the program lacks the queue package: %v", deps)
	}
}
