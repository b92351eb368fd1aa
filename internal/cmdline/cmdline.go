// Package cmdline is what the command-line tools (millrace, its bench and
// guard commands) share to print safely and briefly: passwords redacted
// from every connection string, error and log line, flag defaults that
// never print an environment variable's value, and flag errors in one
// line.
package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/millrace/millrace/internal/redact"
)

// Mask replaces a password.
const Mask = redact.Mask

var (
	// urlPassword is the password of a URL's user info:
	// scheme://user:password@host. The password runs to the last @
	// before the host (an unescaped @ in a password is common).
	// ConnSecrets reads the passwords it registers with it and kvPassword;
	// Redact masks by package redact's rule.
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*):[^\s/?#]*@`)
	// kvPassword is a password given as key=value, in a keyword/value
	// connection string (password=... or 'quoted') or a URL's query
	// (?password=...&...); sslpassword too.
	kvPassword = regexp.MustCompile(`(?i)\b(\w*password)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'"]+)`)

	mu      sync.Mutex
	secrets []string // longest first
)

// minSecret is the shortest secret Redact replaces wherever it occurs
// (shorter ones would mangle unrelated text; the patterns still catch
// them in connection strings).
const minSecret = 4

// Redact returns s with every password it recognises replaced by ***,
// by the rule the dashboard applies too (package redact:
// postgres://user:***@host, password=***, PASSWORD '***', "password":
// "***"), and any secret registered with Secret wherever it occurs.
func Redact(s string) string {
	s = redact.String(s)
	mu.Lock()
	defer mu.Unlock()
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}

// Secret registers a secret (a password or token) that Redact removes
// wherever it appears, also URL-escaped.
func Secret(sec string) {
	if len(sec) < minSecret {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec)} {
		found := false
		for _, have := range secrets {
			found = found || have == v
		}
		if !found {
			secrets = append(secrets, v)
		}
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
}

// ConnSecrets registers the passwords in a connection string (URL or
// keyword/value), as written and as the driver reads it (which adds
// PGPASSWORD and the password file).
func ConnSecrets(conn string) {
	for _, m := range urlPassword.FindAllStringSubmatchIndex(conn, -1) {
		pw := conn[m[3]+1 : m[1]-1] // between the user's ':' and the '@'
		Secret(pw)
		if u, err := url.PathUnescape(pw); err == nil {
			Secret(u)
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(conn, -1) {
		v := m[3]
		if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
			v = strings.ReplaceAll(v[1:len(v)-1], `\'`, `'`)
		}
		Secret(v)
		if u, err := url.QueryUnescape(v); err == nil {
			Secret(u)
		}
	}
	if conn == "" {
		return
	}
	if cfg, err := pgconn.ParseConfig(conn); err == nil {
		Secret(cfg.Password)
	}
}

// SecretsFromArgs registers the secrets a command line and its
// environment carry: connection strings' passwords (any argument that
// holds one, DATABASE_URL, PGPASSWORD) and the values of the flags and
// variables named in secretFlags and secretEnv.
func SecretsFromArgs(args []string, secretFlags, secretEnv []string) {
	ConnSecrets(os.Getenv("DATABASE_URL"))
	Secret(os.Getenv("PGPASSWORD"))
	for _, e := range secretEnv {
		secretValue(os.Getenv(e))
	}
	for i, a := range args {
		ConnSecrets(a)
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		for _, f := range secretFlags {
			if name != f {
				continue
			}
			if hasVal {
				secretValue(val)
			} else if i+1 < len(args) {
				secretValue(args[i+1])
			}
		}
	}
}

// secretValue registers a secret value, and the password part of a
// USER:PASS pair too.
func secretValue(v string) {
	Secret(v)
	if _, p, ok := strings.Cut(v, ":"); ok {
		Secret(p)
	}
}

// FromEnv gives the named flags of fs, when they were not on the command
// line, the value of their environment variable (flag name to variable).
// Call it after parsing: the flag's default stays empty, so that -h never
// prints the variable's value (DATABASE_URL carries a password).
func FromEnv(fs *flag.FlagSet, vars map[string]string) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, env := range vars {
		if v, ok := os.LookupEnv(env); ok && !set[name] && v != "" {
			_ = fs.Set(name, v)
		}
	}
}

// RedactingHandler wraps h so that the messages and string, error and
// stringer attributes of every record it handles are redacted.
func RedactingHandler(h slog.Handler) slog.Handler { return redacting{h} }

type redacting struct{ h slog.Handler }

func (r redacting) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r redacting) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r redacting) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return redacting{r.h.WithAttrs(red)}
}

func (r redacting) WithGroup(name string) slog.Handler { return redacting{r.h.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = redactAttr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Redact(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, Redact(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Parse parses fs's flags wherever they appear among args (Go's flag
// package stops at the first argument that is not a flag, which let
// `migrate down 0 --database-url URL` ignore the URL) and returns the
// other arguments in order; "--" ends the flags. -h prints fs.Usage and
// returns flag.ErrHelp. A bad flag prints nothing: the error is one line
// that says what is wrong and names `millrace NAME -h` (NAME is fs's),
// never the whole usage.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	restore := func() {
		fs.Usage = usage
		fs.SetOutput(nil)
	}
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			restore()
			if errors.Is(err, flag.ErrHelp) {
				if usage != nil {
					usage()
				} else {
					fs.PrintDefaults()
				}
				return nil, err
			}
			return nil, FlagError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			restore()
			return rest, nil
		}
		if args[0] == "--" {
			restore()
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

var (
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)
	undefined    = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	needsArg     = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// FlagError rewrites an error of fs.Parse as one line that says what to
// do: a duration without a unit asks for one (`--stress 10: use a unit,
// e.g. 10s`), and every message ends by naming `millrace NAME -h`.
func FlagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		msg = fmt.Sprintf("--%s %q: %s", name, value, m[3])
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case time.Duration:
					if _, err := strconv.ParseFloat(value, 64); err == nil {
						return fmt.Errorf("--%s %s: use a unit, e.g. %ss", name, value, value)
					}
					msg = fmt.Sprintf("--%s %q: not a duration; give a number and a unit, e.g. 10s, 500ms, 5m", name, value)
				case int, int64, uint, uint64:
					msg = fmt.Sprintf("--%s %q: want a whole number", name, value)
				case float64:
					msg = fmt.Sprintf("--%s %q: want a number", name, value)
				case bool:
					msg = fmt.Sprintf("--%s=%q: want true or false", name, value)
				}
			}
		}
	} else if m := undefined.FindStringSubmatch(msg); m != nil {
		msg = "unknown flag --" + m[1]
	} else if m := needsArg.FindStringSubmatch(msg); m != nil {
		msg = "flag --" + m[1] + " needs a value"
	}
	return fmt.Errorf("%s (millrace %s -h lists the flags)", msg, fs.Name())
}

// NoSchema is what a command says on a database without the queue's
// schema (or with an older one than it knows).
const NoSchema = "this database has no millrace schema (or an older one than this binary's): run `millrace migrate up` with the same --database-url"

// Message renders err for a command's one line of error output: the
// root cause first (a connection that failed says why the last attempt
// failed, once, not each of the driver's attempts in turn), a missing
// schema as what to run, on one line, passwords redacted and control
// characters escaped.
func Message(err error) string {
	msg := err.Error()
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce):
		msg = connectCause(ce)
	case errors.As(err, &pe) && missingSchema(pe):
		msg = NoSchema
	}
	return Escape(Redact(strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")))
}

// missingSchema reports whether pe says the millrace schema, or one of
// its functions, views or tables, does not exist.
func missingSchema(pe *pgconn.PgError) bool {
	switch pe.Code {
	case "3F000", "42883", "42P01": // invalid_schema_name, undefined_function, undefined_table
		return strings.Contains(pe.Message, "millrace")
	}
	return false
}

// connectCause is why a connection failed, root cause first: the
// server's own error when it sent one (database "x" does not exist,
// password authentication failed), else the last attempt's error (with
// sslmode=prefer the driver tries TLS first, then plain text; the TLS
// refusal is not the cause), then where it tried to connect.
func connectCause(ce *pgconn.ConnectError) string {
	where := ""
	if c := ce.Config; c != nil {
		where = fmt.Sprintf(" (connecting to %s as %s, database %s)", net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.User, c.Database)
	}
	var pe *pgconn.PgError
	if errors.As(ce, &pe) {
		if missingSchema(pe) {
			return NoSchema
		}
		return pe.Message + where
	}
	last := leaves(ce.Unwrap())
	if len(last) == 0 {
		return ce.Error()
	}
	e := last[len(last)-1]
	// The attempt's error names its address first; where says it once.
	if u := errors.Unwrap(e); u != nil && strings.HasSuffix(e.Error(), u.Error()) {
		e = u
	}
	// A host that does not resolve is looked up more than once (the
	// driver joins each lookup's error): say each cause once.
	var msgs []string
	seen := map[string]bool{}
	for _, x := range leaves(e) {
		if m := x.Error(); !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ") + where
}

// leaves flattens errors.Join'ed errors into their parts, in order.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// Escape returns s with what a terminal would act on written out: C0
// and C1 control characters and DEL (\n, \r, \t, \x1b, \u009b ...), the
// Unicode line and paragraph separators, bidirectional overrides, and
// bytes that are not UTF-8. Names, kinds, arguments and errors come from
// producers; printed raw, a newline in a queue name forges a row and an
// escape sequence retitles or clears the operator's terminal.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if needsEscape(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == utf8.RuneError || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Bidi_Control, r)
}

// EscapeJSON makes encoding/json's output safe for a terminal: it leaves
// C1 control characters, DEL and bidirectional overrides raw; they become
// \u escapes, which decode to the same string.
func EscapeJSON(b []byte) []byte {
	s := string(b)
	clean := true
	for _, r := range s {
		if r >= 0x7f && needsEscape(r) {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	var out strings.Builder
	for _, r := range s {
		if r >= 0x7f && r != utf8.RuneError && needsEscape(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.WriteRune(r)
		}
	}
	return []byte(out.String())
}
