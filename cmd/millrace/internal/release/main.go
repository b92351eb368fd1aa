// Command release prepares the repository's Go modules for a release, in
// which all of them are tagged together at one version (docs/release.md).
// Run it from anywhere in the repository:
//
//	go run ./cmd/millrace/internal/release version v0.2.0  # every module requires its siblings at v0.2.0; go.work follows
//	go run ./cmd/millrace/internal/release check           # the modules are ready to be published at that version
//	go run ./cmd/millrace/internal/release tags            # the git tags of that version, one a line
//	go run ./cmd/millrace/internal/release tidy            # go mod tidy of every module, outside the workspace
//
// tidy is the way to tidy a module of the workspace: go mod tidy ignores
// go.work, so on its own it would fetch the siblings at their release
// version, which is not published yet. tidy serves them from the tree
// instead (a file:// module proxy) and keeps their checksums, which are
// not those of the published tags, out of go.sum.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/millrace/millrace/cmd/millrace/internal/modproxy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release version vX.Y.Z | check | tags | tidy")
	}
	root, err := modproxy.FindRoot(".")
	if err != nil {
		return err
	}
	w, err := modproxy.Read(root)
	if err != nil {
		return err
	}
	switch {
	case args[0] == "version" && len(args) == 2:
		return w.SetVersion(args[1])
	case args[0] == "check" && len(args) == 1:
		version, err := check(w)
		if err == nil {
			fmt.Printf("every module is ready to be tagged %s\n", version)
		}
		return err
	case args[0] == "tags" && len(args) == 1:
		version, err := check(w)
		if err != nil {
			return err
		}
		for _, dir := range w.Dirs {
			fmt.Println(modproxy.Tag(dir, version))
		}
		return nil
	case args[0] == "tidy" && len(args) == 1:
		return tidy(w)
	}
	return fmt.Errorf("unknown arguments %q: want version vX.Y.Z, check, tags or tidy", args)
}

// check returns the modules' version, or all that keeps them from being
// published at it.
func check(w *modproxy.Workspace) (string, error) {
	version, errs := w.Version()
	return version, errors.Join(errs...)
}

// tidy runs go mod tidy in every module, with the modules served at their
// version from a temporary proxy, then drops their lines from go.sum.
func tidy(w *modproxy.Workspace) error {
	version, err := check(w)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "millrace-modproxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := w.Serve(dir, version); err != nil {
		return err
	}
	env, err := w.Env(dir)
	if err != nil {
		return err
	}
	for _, d := range w.Dirs {
		fmt.Println("go mod tidy in", d)
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir, cmd.Env = filepath.Join(w.Root, d), append(env, "GOFLAGS=-mod=mod")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %w", d, err)
		}
		if err := dropSums(w, filepath.Join(w.Root, d, "go.sum")); err != nil {
			return err
		}
	}
	return nil
}

// dropSums removes the workspace's own modules from a go.sum: their
// checksums there would be those of the tree, not of the published tags.
func dropSums(w *modproxy.Workspace, name string) error {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if path, _, _ := strings.Cut(sc.Text(), " "); !w.Ours(path) {
			out.WriteString(sc.Text() + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return os.WriteFile(name, out.Bytes(), 0o644)
}
