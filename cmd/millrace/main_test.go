package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) {
	// A test that runs the real command starts this binary again with
	// MILLRACE_ARGS (a JSON array): it runs main with them instead of the
	// tests (see millrace in ops_test.go).
	if a := os.Getenv("MILLRACE_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			panic(err)
		}
		os.Args = append([]string{"millrace"}, args...)
		main()
		os.Exit(0)
	}
	testkit.Main(m)
}

func TestParseArgsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	url := fs.String("database-url", "", "")
	yes := fs.Bool("yes", false, "")
	pos, err := parseArgs(fs, []string{"down", "0", "--database-url", "U", "--yes", "--", "-x"})
	if err != nil || *url != "U" || !*yes || strings.Join(pos, " ") != "down 0 -x" {
		t.Fatalf("parseArgs: %v, url %q, yes %v, positional %q", err, *url, *yes, pos)
	}
	if _, err := parseArgs(fs, []string{"up", "--nope"}); err == nil {
		t.Fatal("an unknown flag after the action was accepted")
	}
}

// migrate down without --yes refuses before it changes anything; with
// the URL after the action, it is the URL given, not $DATABASE_URL, that is
// migrated.
func TestMigrateFlagsAnywhereAndConfirm(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
	if err := runMigrate(ctx, []string{"up", "--database-url", url}); err != nil {
		t.Fatalf("up with the flag after the action: %v", err)
	}
	if err := runMigrate(ctx, []string{"status", "--database-url", url}); err != nil {
		t.Fatalf("status with the flag after the action: %v", err)
	}
	err := runMigrate(ctx, []string{"down", "0", "--database-url", url})
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("down 0 without --yes: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'millrace'").Scan(&n)
	if n != 1 {
		t.Fatal("down without --yes removed the schema")
	}
	if err := runMigrate(ctx, []string{"down", "0", "--yes", "--database-url", url}); err != nil {
		t.Fatal(err)
	}
	conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'millrace'").Scan(&n)
	if n != 0 {
		t.Fatal("down 0 --yes left the schema")
	}
	if err := runMigrate(ctx, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
}

// Every command exits 0 for -h, and errors are one line.
func TestHelpExitsZero(t *testing.T) {
	if os.Getenv("MILLRACE_MAIN") != "" {
		os.Args = strings.Fields(os.Getenv("MILLRACE_MAIN"))
		main()
		os.Exit(0)
	}
	run := func(args string) (int, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
		cmd.Env = append(os.Environ(), "MILLRACE_MAIN=millrace "+args)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	for _, args := range []string{"-h", "migrate -h", "guard -h", "guard watch -h", "guard check -h", "bench -h",
		"ui -h", "queues -h", "jobs -h", "jobs list -h", "jobs cancel -h", "queue -h", "queue pause -h"} {
		if code, out := run(args); code != 0 {
			t.Errorf("millrace %s exited %d:\n%s", args, code, out)
		}
	}
	code, out := run("migrate status --database-url postgres://nobody@127.0.0.1:1/none")
	if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("a connection error: exit %d, output %q; want exit 1 and one line", code, out)
	}
	code, out = run("guard check --warn-age 1h --crit-age 1m")
	if code != 3 || !strings.HasPrefix(out, "UNKNOWN: --warn-age") {
		t.Errorf("guard check with --warn-age above --crit-age: exit %d, %q; want exit 3 and an UNKNOWN line", code, out)
	}
	code, out = run("guard check --database-url postgres://nobody@127.0.0.1:1/none")
	if code != 3 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.HasPrefix(out, "UNKNOWN: ") {
		t.Errorf("guard check on a dead server: exit %d, output %q; want exit 3 and one UNKNOWN line", code, out)
	}
}

// secretOutput runs the real command with env added and returns its
// exit code and everything it printed.
func secretOutput(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "MILLRACE_ARGS="+string(a)), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// No command shows a password: not with -h (flag defaults), not with a bad
// flag, not in its errors (a server that refuses, a connection string that
// does not parse, a keyword/value one), whether the password comes from
// DATABASE_URL or from the command line; nor the dashboard's token.
func TestNoPasswordInOutput(t *testing.T) {
	env := []string{"DATABASE_URL=postgres://u:s3cret@127.0.0.1:1/x", "MILLRACE_UI_TOKEN=s3cret-token", "MILLRACE_UI_BASIC_AUTH=admin:s3cret-basic"}
	cmds := [][]string{{"help"}, {"bench"}, {"migrate"}, {"migrate", "up"}, {"guard"}, {"guard", "watch"}, {"guard", "check"}, {"ui"},
		{"queues"}, {"jobs"}, {"jobs", "list"}, {"jobs", "show", "1"}, {"jobs", "cancel", "1"}, {"jobs", "retry", "1"},
		{"queue"}, {"queue", "pause", "q"}, {"queue", "resume", "q"}}
	var runs [][]string
	for _, c := range cmds {
		runs = append(runs, append(append([]string{}, c...), "-h"), append(append([]string{}, c...), "--nope"))
	}
	runs = append(runs,
		[]string{"queues"}, []string{"migrate", "status"}, []string{"guard", "check"}, []string{"jobs", "list", "--limit", "x"},
		[]string{"bench", "--strategies", "skiplocked", "--warmup", "0s", "--clean", "1s", "--stress", "0s", "--recovery", "0s", "--out", t.TempDir()},
		[]string{"bench", "--stress", "x"},
		[]string{"queues", "--database-url", "postgres://u:s3cret@127.0.0.1:notaport/x"},
		[]string{"queues", "--database-url", "postgres://u:s3cret@127.0.0.1:1/x?sslmode=nonsense"},
		[]string{"queues", "--database-url", "host=127.0.0.1 port=1 user=u password=s3cret dbname=x"},
		[]string{"queues", "--database-url", "host=127.0.0.1 port=notaport user=u password=s3cret dbname=x"},
		[]string{"guard", "check", "--database-url", "postgres://u:s3cret@127.0.0.1:1/x?sslmode=nonsense"},
		[]string{"guard", "check", "--standby-url", "postgres://u:s3cret@[::1/x", "--database-url", "postgres://u:s3cret@127.0.0.1:1/x"},
		[]string{"ui", "--listen", "127.0.0.1:-1"},
	)
	for _, args := range runs {
		code, out := secretOutput(t, env, args...)
		if strings.Contains(out, "s3cret") {
			t.Errorf("millrace %s (exit %d) shows a password:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// A bad flag is one line: what is wrong and, but for a duration without
// a unit (which says what to write), where the flags are listed; never
// the whole usage.
func TestFlagErrorOneLine(t *testing.T) {
	for args, want := range map[string]string{
		"bench --stress 10":           "--stress 10: use a unit, e.g. 10s",
		"bench --work 5parsecs":       `--work "5parsecs": not a duration`,
		"guard check --warn-age 5":    "UNKNOWN: --warn-age 5: use a unit, e.g. 5s",
		"guard watch --nope":          "unknown flag --nope (millrace guard watch -h lists the flags)",
		"queues --nope":               "unknown flag --nope (millrace queues -h lists the flags)",
		"jobs list --limit x":         `--limit "x": want a whole number (millrace jobs -h lists the flags)`,
		"jobs list --since":           "flag --since needs a value",
		"queue pause q --yes=maybe":   `--yes="maybe": want true or false`,
		"migrate up --nope":           "unknown flag --nope (millrace migrate -h lists the flags)",
		"ui --nope":                   "unknown flag --nope (millrace ui -h lists the flags)",
		"bench --rate":                "flag --rate needs a value (millrace bench -h lists the flags)",
		"guard check --crit-xids 1.5": `--crit-xids "1.5": want a whole number`,
	} {
		code, out := secretOutput(t, []string{"DATABASE_URL="}, strings.Fields(args)...)
		if code == 0 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, want) {
			t.Errorf("millrace %s: exit %d, output:\n%s\nwant a non-zero exit and one line containing %q", args, code, out, want)
		}
	}
}
