package millrace_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// workspaceModules returns the directories go.work uses, as written there
// ("." and "./guard" style, without the "./" of the others).
func workspaceModules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "use (":
			in = true
		case in && line == ")":
			in = false
		case in && line != "":
			dirs = append(dirs, line)
		case strings.HasPrefix(line, "use "):
			dirs = append(dirs, strings.TrimSpace(strings.TrimPrefix(line, "use ")))
		}
	}
	if len(dirs) == 0 {
		t.Fatal("go.work uses no module")
	}
	return dirs
}

// testCommand returns the one line of file that runs `go test`, failing
// unless there is exactly one.
func testCommand(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "go test ") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want one `go test` command line, found %d: %q", file, len(found), found)
	}
	return found[0]
}

// TestTestCommandCoversWorkspace: the README's test command (command 2)
// tests every module of the workspace, and .ci/run runs exactly that
// command. In workspace mode ./... stops at a nested module's directory,
// so each module needs its own pattern.
func TestTestCommandCoversWorkspace(t *testing.T) {
	readme := testCommand(t, "README.md")
	ci := testCommand(t, ".ci/run")
	if readme != ci {
		t.Errorf(".ci/run runs\n\t%s\nbut the README's test command is\n\t%s", ci, readme)
	}
	if !strings.HasSuffix(readme, "&& .ci/matrix") {
		t.Errorf("the README's test command does not end by running the version matrix (&& .ci/matrix): %s", readme)
	}
	args := strings.Fields(readme)
	for _, dir := range workspaceModules(t) {
		pattern := "./" + strings.TrimPrefix(dir, "./") + "/..."
		if dir == "." {
			pattern = "./..."
		}
		if !slices.Contains(args, pattern) {
			t.Errorf("the README's test command does not test module %s of go.work (%s is missing): %s", dir, pattern, readme)
		}
	}
}

// TestNoBuildOutputsCommitted: no compiled program is committed, and
// .gitignore keeps out what `go build` leaves in a main package's
// directory. A tracked file that starts with an ELF, Mach-O or PE header
// is a build output.
func TestNoBuildOutputsCommitted(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v)", err)
	}
	magic := []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xce\xfa\xed\xfe", "MZ"}
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(path)
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if slices.ContainsFunc(magic, func(m string) bool { return strings.HasPrefix(string(head[:n]), m) }) {
			t.Errorf("%s is a compiled program: git rm it; .gitignore keeps build outputs out", path)
		}
	}
	// What `go build` writes in the directory of each command.
	for _, bin := range []string{"cmd/millrace/millrace", "bench/river/river", "examples/quickstart/quickstart", "millrace"} {
		if err := exec.Command("git", "check-ignore", "-q", "--no-index", bin).Run(); err != nil {
			t.Errorf("%s (a build output) is not ignored by .gitignore", bin)
		}
	}
}
