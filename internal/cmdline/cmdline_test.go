package cmdline

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@127.0.0.1:5432/x":                  "postgres://u:***@127.0.0.1:5432/x",
		"postgresql://u:p@ss@host/db?sslmode=disable":           "postgresql://u:***@host/db?sslmode=disable",
		"connect postgres://:pw@h/db and postgres://v:w@h2/db2": "connect postgres://:***@h/db and postgres://v:***@h2/db2",
		"postgres://host:5432/db":                               "postgres://host:5432/db",
		"postgres://u@host/db":                                  "postgres://u@host/db",
		"host=h user=u password=s3cret dbname=x":                "host=h user=u password=*** dbname=x",
		"host=h password = 'a b\\' c' dbname=x":                 "host=h password = *** dbname=x",
		"postgres://u@h/db?password=s3cret&sslmode=disable":     "postgres://u@h/db?password=***&sslmode=disable",
		"sslpassword=k3y":                                       "sslpassword=***",
		"no secret here":                                        "no secret here",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretsRegistered(t *testing.T) {
	ConnSecrets("postgres://u:we%2Frd@host/db")
	SecretsFromArgs([]string{"--token", "t0ken-value", "--basic-auth=admin:hunter22"}, []string{"token", "basic-auth"}, nil)
	for _, s := range []string{"we/rd", "we%2Frd", "t0ken-value", "hunter22"} {
		if got := Redact("value " + s + " end"); got != "value *** end" {
			t.Errorf("secret %q: %q", s, got)
		}
	}
	// A malformed URL the pattern misses still loses its registered password.
	if got := Redact("cannot parse postgres://u:we/rd@host"); strings.Contains(got, "we/rd") {
		t.Errorf("malformed URL: %q", got)
	}
}

func TestFromEnvLeavesDefaultsEmpty(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:s3cret@h/x")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	u := fs.String("database-url", "", "database (default $DATABASE_URL)")
	var help bytes.Buffer
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if strings.Contains(help.String(), "s3cret") {
		t.Errorf("the defaults print the password: %s", help.String())
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	FromEnv(fs, map[string]string{"database-url": "DATABASE_URL", "token": "NO_SUCH_FLAG"})
	if *u != "postgres://u:s3cret@h/x" {
		t.Errorf("from the environment: %q", *u)
	}
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	u2 := fs2.String("database-url", "", "")
	if err := fs2.Parse([]string{"--database-url", "given"}); err != nil {
		t.Fatal(err)
	}
	FromEnv(fs2, map[string]string{"database-url": "DATABASE_URL"})
	if *u2 != "given" {
		t.Errorf("the flag given lost to the environment: %q", *u2)
	}
}

func TestRedactingHandler(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(RedactingHandler(slog.NewTextHandler(&b, nil))).With("url", "postgres://u:s3cret@h/x")
	l.Info("connect postgres://u:s3cret@h/x", "error", errors.New("password=s3cret refused"), slog.Group("g", "dsn", "password=s3cret"))
	if strings.Contains(b.String(), "s3cret") {
		t.Errorf("a log line shows the password: %s", b.String())
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain queue · ünïcode":      "plain queue · ünïcode",
		"a\nb\tc\rd":                 `a\nb\tc\rd`,
		"\x1b]0;title\x07":           `\x1b]0;title\x07`,
		"csi\u009b2J del\x7f":        `csi\u009b2J del\x7f`,
		"rtl\u202eevil sep\u2028x":   `rtl\u202eevil sep\u2028x`,
		"bad \xff byte":              `bad \xff byte`,
		"\x00nul":                    `\x00nul`,
		`already \n literal`:         `already \n literal`,
		"emoji 🐘 stays":              "emoji 🐘 stays",
		"zero\u200bwidth stays text": "zero\u200bwidth stays text",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	in := []byte(`{"q":"a` + "\u009b" + `b` + "\u202e" + `"}`)
	if got := string(EscapeJSON(in)); got != `{"q":"a\u009bb\u202e"}` {
		t.Errorf("EscapeJSON: %s", got)
	}
}

func TestMessageOneLineEscaped(t *testing.T) {
	got := Message(errors.New("queue \"evil\nrow\x1b]0;t\x07\": postgres://u:s3cret@h/x"))
	if got != `queue "evil; row\x1b]0;t\x07": postgres://u:***@h/x` {
		t.Errorf("Message: %q", got)
	}
}
