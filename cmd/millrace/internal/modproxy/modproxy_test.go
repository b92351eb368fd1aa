package modproxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetVersion: on a copy of the repository's go.work and go.mod files,
// SetVersion moves every module and go.work to the new version, after
// which Version finds nothing that keeps them from being published, and
// go.work keeps its comments.
func TestSetVersion(t *testing.T) {
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	files := []string{"go.work"}
	for _, d := range w.Dirs {
		files = append(files, filepath.Join(d, "go.mod"))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Read(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetVersion("v0.98.7"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"v0.98", "v2.0.0"} {
		if err := c.SetVersion(bad); err == nil {
			t.Errorf("SetVersion accepted %s", bad)
		}
	}
	c, err = Read(tmp)
	if err != nil {
		t.Fatal(err)
	}
	version, errs := c.Version()
	for _, err := range errs {
		t.Error(err)
	}
	if version != "v0.98.7" {
		t.Errorf("Version = %s after SetVersion(v0.98.7)", version)
	}
	work, _ := os.ReadFile(filepath.Join(tmp, "go.work"))
	if strings.Count(string(work), "v0.98.7") != len(w.Dirs) || !strings.Contains(string(work), "docs/release.md") {
		t.Errorf("go.work after SetVersion:\n%s", work)
	}
	if got := Tag("cmd/millrace", version); got != "cmd/millrace/v0.98.7" {
		t.Errorf("Tag(cmd/millrace) = %s", got)
	}
	if got := Tag(".", version); got != "v0.98.7" {
		t.Errorf("Tag(.) = %s", got)
	}
}
