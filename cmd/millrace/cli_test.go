package main

import (
	"strings"
	"testing"
)

// An unknown host is reported once, not once per lookup the driver made.
func TestUnknownHostOnce(t *testing.T) {
	code, _, errs := millrace(t, "queues", "--database-url", "postgres://u@nosuchhost.invalid/db?connect_timeout=5")
	if code != 1 || !strings.Contains(errs, "nosuchhost.invalid") {
		t.Fatalf("queues on an unknown host: exit %d %q", code, errs)
	}
	msg := strings.TrimSpace(strings.TrimPrefix(errs, "millrace queues: "))
	msg, _, _ = strings.Cut(msg, " (connecting to") // where it tried, said once
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, "; ") {
		if seen[part] {
			t.Errorf("the error says %q twice: %q", part, errs)
		}
		seen[part] = true
	}
	oneLineErr(t, errs, "nosuchhost.invalid")
}

// A subcommand typo names the typo and suggests the command meant, in
// every group of the CLI; before, guard chek printed the usage.
func TestUnknownSubcommandSuggests(t *testing.T) {
	for args, want := range map[string]string{
		"guard chek":     `millrace guard: unknown command "chek": did you mean "check"? (want watch or check)`,
		"jobs lsit":      `millrace jobs: unknown command "lsit": did you mean "list"? (want list, show, cancel or retry)`,
		"queue pase x":   `millrace queue: unknown command "pase": did you mean "pause"? (want pause, resume or limit)`,
		"migrate stauts": `millrace migrate: unknown command "stauts": did you mean "status"? (want up, down or status)`,
		"jbos":           `millrace: unknown command "jbos": did you mean "jobs"? (millrace help lists the commands)`,
		"guard zzz":      `millrace guard: unknown command "zzz" (want watch or check)`,
	} {
		code, out, errs := millrace(t, strings.Fields(args)...)
		if code == 0 || out != "" || strings.TrimSpace(errs) != want {
			t.Errorf("millrace %s: exit %d, stdout %q, stderr %q; want one line %q", args, code, out, errs, want)
		}
	}
}
