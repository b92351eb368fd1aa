package ui

import (
	"encoding/json"

	shared "github.com/millrace/millrace/internal/redact"
)

// redact is the one redaction rule (package redact, which the command's
// output shares): everything the dashboard shows or logs that it did not
// write itself (errors, query texts, jobs' arguments and errors) goes
// through it.
func redact(s string) string { return shared.String(s) }

// redactJSON is redact for a JSON document: it stays valid JSON.
func redactJSON(b json.RawMessage) json.RawMessage { return shared.JSON(b) }
