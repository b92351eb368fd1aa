// Package sqlcomment tags SQL statements with SQLCommenter comments
// (https://google.github.io/sqlcommenter/spec/) and reads them back.
//
// A tagged statement carries key='value' pairs in a trailing comment:
//
//	SELECT * FROM reports /*action='monthly',app='reports'*/
//
// PostgreSQL shows the full text, comment included, in pg_stat_activity.query,
// which is how the millrace guard sorts sessions into workload classes.
// pg_stat_activity truncates query text at track_activity_query_size bytes
// (1024 by default): keep tagged statements shorter than that or raise the
// setting, or the trailing tag is cut off.
//
// pgx v5 query tracers cannot rewrite SQL, so tagging is done by a wrapper:
// WithTags returns a Querier whose Exec, Query and QueryRow append the tags
// (static ones given to WithTags merged with those carried by the context,
// see NewContext) before passing the statement on.
package sqlcomment

import (
	"context"
	"net/url"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tag returns sql with tags appended as a SQLCommenter comment. Keys are
// sorted; keys and values are URL-encoded and values single-quoted with
// embedded quotes escaped, per the specification. A trailing semicolon
// stays last. If tags is empty, or sql already ends with a SQLCommenter
// comment, sql is returned unchanged (the specification forbids mutating a
// statement that already carries one).
func Tag(sql string, tags map[string]string) string {
	if len(tags) == 0 {
		return sql
	}
	body := strings.TrimRight(sql, " \t\r\n")
	semi := ""
	for strings.HasSuffix(body, ";") {
		semi += ";"
		body = strings.TrimRight(strings.TrimSuffix(body, ";"), " \t\r\n")
	}
	if strings.HasSuffix(body, "*/") && len(Parse(body)) > 0 {
		return sql
	}
	sep := " "
	// A "--" comment on the last line would swallow the tag.
	lastLine := body
	if i := strings.LastIndexByte(body, '\n'); i >= 0 {
		lastLine = body[i+1:]
	}
	if strings.Contains(lastLine, "--") {
		sep = "\n"
	}
	return body + sep + Format(tags) + semi
}

// Format renders tags as one SQLCommenter comment, /*k1='v1',k2='v2'*/,
// keys sorted. It returns "" for no tags.
func Format(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("/*")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(encode(k))
		b.WriteString("='")
		b.WriteString(strings.ReplaceAll(encode(tags[k]), "'", `\'`))
		b.WriteByte('\'')
	}
	b.WriteString("*/")
	return b.String()
}

// encode URL-encodes s the way the SQLCommenter reference implementations
// do (spaces as %20; the result never contains "*/").
func encode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// Parse returns the tags of the last comment in sql that parses as a
// SQLCommenter comment, or nil when there is none. Keys and values are
// URL-decoded and quote escapes removed.
func Parse(sql string) map[string]string {
	end := len(sql)
	for {
		close := strings.LastIndex(sql[:end], "*/")
		if close < 0 {
			return nil
		}
		open := strings.LastIndex(sql[:close], "/*")
		if open < 0 {
			return nil
		}
		if tags := parseBody(sql[open+2 : close]); tags != nil {
			return tags
		}
		end = open
	}
}

// parseBody parses k='v',k2='v2' (whitespace around pairs allowed).
func parseBody(s string) map[string]string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	tags := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil
		}
		key, err := url.QueryUnescape(strings.TrimSpace(s[:eq]))
		if err != nil || key == "" || strings.ContainsAny(key, " '\t\n") {
			return nil
		}
		s = strings.TrimSpace(s[eq+1:])
		if len(s) == 0 || s[0] != '\'' {
			return nil
		}
		// Find the closing quote, skipping \' escapes.
		var raw strings.Builder
		i, closed := 1, false
		for i < len(s) {
			c := s[i]
			if c == '\\' && i+1 < len(s) && s[i+1] == '\'' {
				raw.WriteByte('\'')
				i += 2
				continue
			}
			if c == '\'' {
				closed = true
				i++
				break
			}
			raw.WriteByte(c)
			i++
		}
		if !closed {
			return nil
		}
		val, err := url.PathUnescape(raw.String())
		if err != nil {
			return nil
		}
		tags[key] = val
		s = strings.TrimSpace(s[i:])
		if len(s) > 0 {
			if s[0] != ',' {
				return nil
			}
			s = strings.TrimSpace(s[1:])
			if s == "" {
				return nil
			}
		}
	}
	return tags
}

type ctxKey struct{}

// NewContext returns a context carrying tags, merged over any tags ctx
// already carries. Statements run through a WithTags wrapper with this
// context are tagged with them.
func NewContext(ctx context.Context, tags map[string]string) context.Context {
	merged := map[string]string{}
	for k, v := range FromContext(ctx) {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return context.WithValue(ctx, ctxKey{}, merged)
}

// FromContext returns the tags carried by ctx (nil if none). The map must
// not be modified.
func FromContext(ctx context.Context) map[string]string {
	m, _ := ctx.Value(ctxKey{}).(map[string]string)
	return m
}

// Querier is what pgx connections, pools and transactions offer:
// *pgx.Conn, *pgxpool.Pool, *pgxpool.Conn and pgx.Tx all satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Tagged wraps a Querier and tags every statement it runs.
type Tagged struct {
	db   Querier
	tags map[string]string
}

// WithTags returns a Querier that appends tags, merged with the tags carried
// by each call's context (context tags win on a key conflict), to every
// statement before running it on db.
func WithTags(db Querier, tags map[string]string) *Tagged {
	cp := make(map[string]string, len(tags))
	for k, v := range tags {
		cp[k] = v
	}
	return &Tagged{db: db, tags: cp}
}

func (t *Tagged) tag(ctx context.Context, sql string) string {
	ct := FromContext(ctx)
	if len(ct) == 0 {
		return Tag(sql, t.tags)
	}
	if len(t.tags) == 0 {
		return Tag(sql, ct)
	}
	merged := make(map[string]string, len(t.tags)+len(ct))
	for k, v := range t.tags {
		merged[k] = v
	}
	for k, v := range ct {
		merged[k] = v
	}
	return Tag(sql, merged)
}

// Exec runs the tagged statement with db.Exec.
func (t *Tagged) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.db.Exec(ctx, t.tag(ctx, sql), args...)
}

// Query runs the tagged statement with db.Query.
func (t *Tagged) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.db.Query(ctx, t.tag(ctx, sql), args...)
}

// QueryRow runs the tagged statement with db.QueryRow.
func (t *Tagged) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.db.QueryRow(ctx, t.tag(ctx, sql), args...)
}

// Unwrap returns the wrapped Querier.
func (t *Tagged) Unwrap() Querier { return t.db }
