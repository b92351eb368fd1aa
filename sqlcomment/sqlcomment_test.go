package sqlcomment

import (
	"context"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestTagFormat(t *testing.T) {
	cases := []struct {
		sql  string
		tags map[string]string
		want string
	}{
		{"SELECT 1", nil, "SELECT 1"},
		{"SELECT 1", map[string]string{"app": "reports"}, "SELECT 1 /*app='reports'*/"},
		{"SELECT 1;", map[string]string{"b": "2", "a": "1"}, "SELECT 1 /*a='1',b='2'*/;"},
		{"SELECT 1 -- note", map[string]string{"a": "x"}, "SELECT 1 -- note\n/*a='x'*/"},
		{"SELECT 1", map[string]string{"route": "/param*d", "q": "it's"}, `SELECT 1 /*q='it%27s',route='%2Fparam%2Ad'*/`},
		{"SELECT 1", map[string]string{"k y": "a b"}, "SELECT 1 /*k%20y='a%20b'*/"},
		// Already tagged: left alone.
		{"SELECT 1 /*a='1'*/", map[string]string{"b": "2"}, "SELECT 1 /*a='1'*/"},
	}
	for _, c := range cases {
		if got := Tag(c.sql, c.tags); got != c.want {
			t.Errorf("Tag(%q, %v) = %q, want %q", c.sql, c.tags, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		sql  string
		want map[string]string
	}{
		{"SELECT 1", nil},
		{"SELECT 1 /* plain comment */", nil},
		{"SELECT /*a='1'*/ 1 /*b='2'*/", map[string]string{"b": "2"}},
		{"SELECT 1 /*b='2'*/ /* trailing prose */", map[string]string{"b": "2"}},
		{`SELECT 1 /*q='it\'s',route='%2Fparam*d'*/;`, map[string]string{"q": "it's", "route": "/param*d"}},
		{"SELECT 1 /* a = 'x y' , b='' */", map[string]string{"a": "x y", "b": ""}},
		{"SELECT 1 /*a='unterminated*/", nil},
		{"SELECT 1 /*a='1',*/", nil},
	}
	for _, c := range cases {
		if got := Parse(c.sql); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tags := map[string]string{"app": "reports", "action": "monthly 'close'", "odd": "*/ --", "ünï": "çødé"}
	if got := Parse(Tag("SELECT 1", tags)); !reflect.DeepEqual(got, tags) {
		t.Fatalf("round trip: got %v, want %v", got, tags)
	}
}

func TestContextTags(t *testing.T) {
	ctx := NewContext(context.Background(), map[string]string{"a": "1", "b": "1"})
	ctx = NewContext(ctx, map[string]string{"b": "2"})
	if got, want := FromContext(ctx), map[string]string{"a": "1", "b": "2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("FromContext = %v, want %v", got, want)
	}
	if FromContext(context.Background()) != nil {
		t.Fatal("empty context has tags")
	}
}

// TestWrapperShowsInActivity runs a tagged statement and reads its tags back
// from pg_stat_activity through another connection, as the guard does.
func TestWrapperShowsInActivity(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	db := WithTags(conn, map[string]string{"app": "reports", "action": "static"})
	var pid int
	if err := db.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(NewContext(ctx, map[string]string{"action": "monthly"}), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, "SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := db.Exec(NewContext(ctx, map[string]string{"action": "monthly"}), "SELECT 3"); err != nil {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	var q string
	if err := mon.QueryRow(ctx, "SELECT query FROM pg_stat_activity WHERE pid = $1", pid).Scan(&q); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "reports", "action": "monthly"}
	if got := Parse(q); !reflect.DeepEqual(got, want) {
		t.Fatalf("pg_stat_activity.query = %q: tags %v, want %v", q, got, want)
	}
}
