package redact

import (
	"encoding/json"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@127.0.0.1:5432/x":              "postgres://u:***@127.0.0.1:5432/x",
		"postgresql://u:p@ss@host/db?sslmode=disable":       "postgresql://u:***@host/db?sslmode=disable",
		"a postgres://:pw@h/db and postgres://v:w@h2/db2":   "a postgres://:***@h/db and postgres://v:***@h2/db2",
		"postgres://host:5432/db postgres://u@host/db":      "postgres://host:5432/db postgres://u@host/db",
		"host=h user=u password=s3cret dbname=x":            "host=h user=u password=*** dbname=x",
		`host=h password = 'a b\' c' dbname=x`:              "host=h password = *** dbname=x",
		"postgres://u@h/db?password=s3cret&sslmode=disable": "postgres://u@h/db?password=***&sslmode=disable",
		"sslpassword=k3y": "sslpassword=***",
		"ALTER ROLE app ENCRYPTED PASSWORD 'it''s s3cret' VALID": "ALTER ROLE app ENCRYPTED PASSWORD '***' VALID",
		`{"db_password": "s3\"cret", "n": 1}`:                    `{"db_password": "***", "n": 1}`,
		"no secret here, password reset mail sent":               "no secret here, password reset mail sent",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{`{"dsn":"postgres://u:p\"w@h/db"}`, `{"k":"password=abc\"def"}`, `{"secret":{"a":1}}`} {
		if out := JSON(json.RawMessage(in)); !json.Valid(out) {
			t.Errorf("JSON(%s) = %s: not JSON", in, out)
		}
	}
}
