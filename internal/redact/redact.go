// Package redact is the one rule by which millrace hides passwords in what
// it shows: the dashboard (package ui) and the command (millrace jobs,
// queues, its errors and logs, through package cmdline) both call it, so
// that a job's arguments or error read the same, masked the same, on a
// page, in a table or in JSON.
package redact

import (
	"encoding/json"
	"regexp"
)

// Mask replaces a password.
const Mask = "***"

var (
	// urlPassword is the password in a URL's user info,
	// scheme://user:password@host; it runs to the last @ before the host.
	urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'"]*):[^\s/?#'"]*@`)
	// kvPassword is a password given as key=value: a keyword/value
	// connection string (password=..., or 'quoted'), a URL's query.
	kvPassword = regexp.MustCompile(`(?i)\b(\w*passw(?:or)?d|pwd)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'",;)\\]+)`)
	// sqlPassword is the literal of CREATE/ALTER ROLE ... PASSWORD '...'.
	sqlPassword = regexp.MustCompile(`(?i)\b(password\s+)'(?:[^']|'')*'`)
	// jsonPassword is the string value of a JSON key that names a
	// password or a secret.
	jsonPassword = regexp.MustCompile(`(?i)("[^"\\]*(?:passw(?:or)?d|secret)[^"\\]*"\s*:\s*)"(?:[^"\\]|\\.)*"`)
)

// String returns s with every password it recognises replaced by ***:
// postgres://user:***@host, password=***, PASSWORD '***' and
// "password": "***". Everything shown or logged that millrace did not
// write itself (errors, query texts, jobs' arguments and errors) goes
// through it.
func String(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}:"+Mask+"@")
	s = kvPassword.ReplaceAllString(s, "${1}${2}"+Mask)
	s = sqlPassword.ReplaceAllString(s, "${1}'"+Mask+"'")
	return jsonPassword.ReplaceAllString(s, `${1}"`+Mask+`"`)
}

// JSON is String for a JSON document: it stays valid JSON (a replacement
// inside a string is plain text; a replaced value is a string).
func JSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b // none kept (a completed attempt's): nothing to mask
	}
	out := json.RawMessage(String(string(b)))
	if !json.Valid(out) {
		return json.RawMessage(`"` + Mask + `"`) // never the original, never broken JSON
	}
	return out
}
