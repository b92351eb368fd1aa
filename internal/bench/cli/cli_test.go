package cli

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the millrace binary for TestInterrupt.
func TestMain(m *testing.M) {
	if args := os.Getenv("MILLRACE_CLI_TEST_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := Bench(ctx, strings.Fields(args)); err != nil {
			var e *Error
			if errors.As(err, &e) {
				os.Exit(e.Code)
			}
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFlagErrors checks that bad input is refused with exit status 2 and a
// message naming the problem, before anything starts.
func TestFlagErrors(t *testing.T) {
	cases := map[string]string{
		"--rate abc":                                    `--rate "abc"`,
		"--rate -5":                                     `--rate "-5"`,
		"--strategies skiplocked,nope":                  `unknown strategy "nope"`,
		"--scenario nope":                               `unknown scenario "nope"`,
		"--scenario burndown":                           "needs --jobs",
		"--workers 4 extra":                             `unexpected argument "extra"`,
		"--guard /nonexistent/policy.yaml":              "policy.yaml",
		"--work 5parsecs":                               "invalid value",
		"--processes 0":                                 "--processes 0",
		"--processes 8 --workers 4":                     "more than --workers 4",
		"--scenario stall --strategies que":             `"que" cannot run the stall scenario`,
		"--mix fial=5":                                  `unknown key "fial"`,
		"--mix fail=abc":                                `fail="abc": want a whole percentage`,
		"--mix fail=60,sched=50":                        "add up to 110, more than 100",
		"--mix fail=5 --strategies que":                 `"que" cannot run --mix`,
		"--mix fail=5 --strategies millrace --rate max": "--mix needs a paced producer",
		"--scenario standby --database-url postgres://127.0.0.1:1/x": "needs --standby-url",
		"--scenario analytics --readers 0":                           "--readers 0: want at least 1",
		"--readers -2 --scenario analytics":                          "--readers -2: want at least 1",
		"--scenario analytics --reader-duration 0s":                  "--reader-duration 0s: want a positive duration",
		"--scenario analytics --reader-interval -5s":                 "--reader-interval -5s: want a positive duration",
		"--scenario analytics --reader-duration soon":                "invalid value",
		"--scenario analytics --stress 5m --reader-duration 6m":      "--reader-duration 6m0s is longer than --stress 5m0s",
		"--reader-duration 30s --stress 20s --scenario analytics":    "is longer than --stress",
		"--readers 3": "--readers applies to the analytics scenario only",
		"--scenario idle-xid --reader-interval 10s": "--reader-interval applies to the analytics scenario only",
		"--reader-readonly --scenario clean":        "--reader-readonly applies to the analytics scenario only",
	}
	for args, want := range cases {
		err := Bench(context.Background(), strings.Fields(args))
		var e *Error
		if !errors.As(err, &e) || e.Code != 2 || !strings.Contains(e.Msg, want) {
			t.Errorf("bench %s: got %v, want exit 2 with %q", args, err, want)
		} else if strings.Contains(e.Msg, "\n") {
			t.Errorf("bench %s: the error spans lines: %q", args, e.Msg)
		}
	}
}

// TestInterrupt runs the standby scenario on the embedded cluster, sends
// Ctrl-C during the stress phase and checks that the bench exits 130 and
// leaves no cluster, standby or process behind.
func TestInterrupt(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL is set: this test needs the embedded cluster and its standby")
	}
	tmp, err := os.MkdirTemp("", "millrace-cli-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // the postgres OS user must reach its cluster dir
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "report")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "MILLRACE_CLI_TEST_ARGS=--scenario standby --strategies skiplocked --rate 100 --workers 2 --warmup 0s --clean 2s --stress 60s --recovery 5s --out "+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var seen []string
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), " stress ") && strings.Contains(lines.Text(), "xmin held") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		seen = append(seen, lines.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130; output:\n%s", err, strings.Join(seen, "\n"))
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "millrace-pg-*")); len(left) > 0 {
		t.Errorf("cluster directories left behind: %v", left)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), tmp) {
			t.Errorf("process left behind: %s: %q", p, b)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
		t.Errorf("an interrupted run wrote summary.json")
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("no partial report: %v", err)
	}
}
