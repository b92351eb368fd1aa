package ui

import (
	"encoding/json"
	"strings"
	"testing"
)

// The dashboard redacts by the one rule (package redact, whose own test
// holds the cases): a password in a connection string and in a job's
// arguments is hidden, and the arguments stay JSON.
func TestRedact(t *testing.T) {
	if got := redact("dial postgres://bob:hunter2@db1/app failed"); strings.Contains(got, "hunter2") {
		t.Errorf("redact kept the password: %q", got)
	}
	out := redactJSON(json.RawMessage(`{"password": "hunter2", "dsn": "postgres://bob:hunter2@db1/app", "n": 1}`))
	if strings.Contains(string(out), "hunter2") || !json.Valid(out) {
		t.Errorf("redactJSON = %s: want valid JSON without the password", out)
	}
}
