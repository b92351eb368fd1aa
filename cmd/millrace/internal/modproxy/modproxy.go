// Package modproxy treats the repository's Go modules as what they are
// once published: the modules go.work lists, released together under one
// version (docs/release.md). It checks that they are ready for that, sets
// their version, and serves them at it from a file:// module proxy, as
// proxy.golang.org would serve their tags, for the install test and for
// go mod tidy outside the workspace.
package modproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Workspace is the tree's modules, as go.work lists them.
type Workspace struct {
	// Root is the repository's root, where go.work is.
	Root string
	// Work is go.work, parsed.
	Work *modfile.WorkFile
	// Dirs are the modules' directories, relative to Root ("." for the
	// root module), in go.work's order.
	Dirs []string
	// Modules are the modules' go.mod files, parsed, by directory.
	Modules map[string]*modfile.File
}

// FindRoot returns the nearest directory at or above dir that holds go.work.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work at or above %s", dir)
		}
	}
}

// Read reads go.work at root and the go.mod of every module it uses.
func Read(root string) (*Workspace, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, err
	}
	work, err := modfile.ParseWork(filepath.Join(root, "go.work"), b, nil)
	if err != nil {
		return nil, err
	}
	w := &Workspace{Root: root, Work: work, Modules: map[string]*modfile.File{}}
	for _, u := range work.Use {
		dir := filepath.Clean(u.Path)
		name := filepath.Join(root, dir, "go.mod")
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(name, b, nil)
		if err != nil {
			return nil, err
		}
		w.Modules[dir] = f
		w.Dirs = append(w.Dirs, dir)
	}
	return w, nil
}

// Ours says whether path is the path of one of the workspace's modules.
func (w *Workspace) Ours(path string) bool {
	for _, f := range w.Modules {
		if f.Module.Mod.Path == path {
			return true
		}
	}
	return false
}

// Tag is the git tag of the module in dir at version: the version for the
// root module, dir/version for the others.
func Tag(dir, version string) string {
	if dir == "." {
		return version
	}
	return filepath.ToSlash(dir) + "/" + version
}

var release = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// Version returns the version the modules require of one another, and
// what keeps them from being published together at it: a replace
// directive in a go.mod (go install of a published version refuses one), a
// requirement of a sibling at another version, a version that is not a
// release (vX.Y.Z), or go.work not replacing exactly that version of every
// module with its directory (without which development would fetch it).
func (w *Workspace) Version() (string, []error) {
	var errs []error
	version := ""
	for _, dir := range w.Dirs {
		f := w.Modules[dir]
		for _, r := range f.Replace {
			errs = append(errs, fmt.Errorf("%s/go.mod replaces %s: go install of a published version refuses a module with replace directives (go.work holds the development replacements)", dir, r.Old.Path))
		}
		for _, r := range f.Require {
			if !w.Ours(r.Mod.Path) {
				continue
			}
			if version == "" {
				version = r.Mod.Version
			}
			if r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s %s, another module %s: the modules are released together, under one version", dir, r.Mod.Path, r.Mod.Version, version))
			}
		}
	}
	if !release.MatchString(version) {
		errs = append(errs, fmt.Errorf("the modules require one another at %q: want a release version, vX.Y.Z", version))
	}
	replaced := map[string]string{}
	for _, r := range w.Work.Replace {
		if !w.Ours(r.Old.Path) {
			continue
		}
		if r.Old.Version != version {
			errs = append(errs, fmt.Errorf("go.work replaces %s %q: want version %s, the one the modules require", r.Old.Path, r.Old.Version, version))
		}
		replaced[r.Old.Path] = filepath.Clean(r.New.Path)
	}
	for _, dir := range w.Dirs {
		if path := w.Modules[dir].Module.Mod.Path; replaced[path] != dir {
			errs = append(errs, fmt.Errorf("go.work does not replace %s %s with ./%s", path, version, dir))
		}
	}
	return version, errs
}

// SetVersion makes every module require its siblings at version, and
// go.work replace that version of each with its directory, and writes the
// files.
func (w *Workspace) SetVersion(version string) error {
	if !release.MatchString(version) {
		return fmt.Errorf("version %q: want vX.Y.Z", version)
	}
	for _, dir := range w.Dirs {
		// v2 and later would need a /v2 suffix on every module path.
		if err := module.Check(w.Modules[dir].Module.Mod.Path, version); err != nil {
			return err
		}
	}
	for _, dir := range w.Dirs {
		f := w.Modules[dir]
		for _, r := range f.Require {
			if w.Ours(r.Mod.Path) {
				if err := f.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
			}
		}
		for _, r := range f.Replace {
			if w.Ours(r.Old.Path) {
				if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					return err
				}
			}
		}
		f.Cleanup()
		b, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(w.Root, dir, "go.mod"), b, 0o644); err != nil {
			return err
		}
	}
	have := map[string]bool{}
	for _, r := range w.Work.Replace {
		if w.Ours(r.Old.Path) && len(r.Syntax.Token) >= 4 && r.Syntax.Token[2] == "=>" {
			r.Syntax.Token[1] = version // in place, keeping the comments
			r.Old.Version = version
			have[r.Old.Path] = true
		}
	}
	for _, dir := range w.Dirs {
		if path := w.Modules[dir].Module.Mod.Path; !have[path] {
			if err := w.Work.AddReplace(path, version, "./"+filepath.ToSlash(dir), ""); err != nil {
				return err
			}
		}
	}
	w.Work.Cleanup()
	return os.WriteFile(filepath.Join(w.Root, "go.work"), modfile.Format(w.Work.Syntax), 0o644)
}

// Serve writes every module, at version, into dir as a module proxy does:
// <module>/@v/list, <version>.info, .mod and .zip, the zip made from the
// module's directory as proxy.golang.org makes it from a tag (without the
// files of the modules nested in it). In a git checkout, the zip holds the
// files git would commit, as they are in the work tree (tracked, and
// untracked but not ignored): no build output or bench run that
// .gitignore keeps out.
func (w *Workspace) Serve(dir, version string) error {
	info, err := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	for _, d := range w.Dirs {
		path := w.Modules[d].Module.Mod.Path
		esc, err := module.EscapePath(path)
		if err != nil {
			return err
		}
		at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		gomod, err := os.ReadFile(filepath.Join(w.Root, d, "go.mod"))
		if err != nil {
			return err
		}
		for name, body := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
			if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
				return err
			}
		}
		z, err := os.Create(filepath.Join(at, version+".zip"))
		if err != nil {
			return err
		}
		mv := module.Version{Path: path, Version: version}
		if files, ok := gitFiles(filepath.Join(w.Root, d)); ok {
			err = modzip.Create(z, mv, files)
		} else {
			err = modzip.CreateFromDir(z, mv, filepath.Join(w.Root, d))
		}
		if cerr := z.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("zip of module %s: %w", path, err)
		}
	}
	return nil
}

// Env returns the environment for a go command that resolves the modules
// from the proxy in dir instead of the workspace: no go.work, the proxy in
// dir first, then the module cache this machine already has, then its own
// GOPROXY; and no checksum database for the modules (those under the root
// module's path), which none knows at this version.
func (w *Workspace) Env(dir string) ([]string, error) {
	goenv := func(name string) (string, error) {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			return "", fmt.Errorf("go env %s: %w", name, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	upstream, err := goenv("GOPROXY")
	if err != nil {
		return nil, err
	}
	modcache, err := goenv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	if upstream == "" {
		return nil, errors.New("go env GOPROXY is empty")
	}
	cache := filepath.Join(modcache, "cache", "download")
	return append(os.Environ(),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(dir)+",file://"+filepath.ToSlash(cache)+","+upstream,
		"GOPRIVATE=", "GONOPROXY=",
		"GONOSUMDB="+w.Modules["."].Module.Mod.Path,
	), nil
}

// gitFile is a file of a module's directory, by its path from there.
type gitFile struct{ dir, path string }

func (f gitFile) Path() string { return f.path }
func (f gitFile) Lstat() (os.FileInfo, error) {
	return os.Lstat(filepath.Join(f.dir, filepath.FromSlash(f.path)))
}
func (f gitFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.dir, filepath.FromSlash(f.path)))
}

// gitFiles lists the files of dir that git would commit: tracked ones still
// in the work tree, and untracked ones it does not ignore. ok is false
// outside a git checkout (or without git).
func gitFiles(dir string) (files []modzip.File, ok bool) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		f := gitFile{dir: dir, path: p}
		if _, err := f.Lstat(); err != nil {
			continue // deleted in the work tree
		}
		files = append(files, f)
	}
	return files, true
}
