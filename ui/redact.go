package ui

import (
	"encoding/json"
	"regexp"
)

// mask replaces a password.
const mask = "***"

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

// redact returns s with every password it recognises replaced by ***:
// postgres://user:***@host, password=***, PASSWORD '***' and
// "password": "***". Everything the dashboard shows or logs that it did
// not write itself (errors, query texts, jobs' arguments and errors) goes
// through it.
func redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}:"+mask+"@")
	s = kvPassword.ReplaceAllString(s, "${1}${2}"+mask)
	s = sqlPassword.ReplaceAllString(s, "${1}'"+mask+"'")
	return jsonPassword.ReplaceAllString(s, `${1}"`+mask+`"`)
}

// redactJSON is redact for a JSON document: it stays valid JSON (a
// replacement inside a string is plain text; a replaced value is a string).
func redactJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b // none kept (a completed attempt's): nothing to mask
	}
	out := json.RawMessage(redact(string(b)))
	if !json.Valid(out) {
		return json.RawMessage(`"` + mask + `"`) // never the original, never broken JSON
	}
	return out
}
