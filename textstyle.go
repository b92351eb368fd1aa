package millrace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrTextStyle is returned, wrapped, by Start when the pool reads results
// as text (pgx's query exec mode exec or simple_protocol, as behind a
// transaction pooler) and its connections show times in a style pgx
// cannot read back: a DateStyle other than ISO (SQL, German, Postgres) or
// an IntervalStyle other than postgres. Every read of a job's times would
// fail to scan. Set them for the pool's connections: in the connection
// string (DateStyle=ISO, IntervalStyle=postgres: pgx sends them at
// startup; PgBouncer passes DateStyle on and refuses IntervalStyle), or
// with ALTER ROLE ... SET. Results read in binary (the other exec modes,
// pgx's default among them) need neither.
var ErrTextStyle = errors.New("millrace: the pool reads results as text in a date or interval style pgx cannot read")

// checkTextStyle returns ErrTextStyle, on one line that says what to set,
// when conn reads results as text and reports (ParameterStatus: no round
// trip) a DateStyle or IntervalStyle whose times pgx cannot parse.
func checkTextStyle(conn *pgx.Conn) error {
	mode := conn.Config().DefaultQueryExecMode
	if mode != pgx.QueryExecModeExec && mode != pgx.QueryExecModeSimpleProtocol {
		return nil
	}
	ds, is := conn.PgConn().ParameterStatus("DateStyle"), conn.PgConn().ParameterStatus("IntervalStyle")
	var fix []string
	if ds != "" && !strings.HasPrefix(ds, "ISO") {
		fix = append(fix, fmt.Sprintf("DateStyle is %q: add DateStyle=ISO to the pool's connection string", ds))
	}
	if is != "" && is != "postgres" {
		// PgBouncer refuses IntervalStyle as a startup parameter.
		fix = append(fix, fmt.Sprintf("IntervalStyle is %q: add IntervalStyle=postgres to the connection string, or through PgBouncer ALTER ROLE ... SET IntervalStyle = 'postgres'", is))
	}
	if len(fix) == 0 {
		return nil
	}
	return fmt.Errorf("%w (exec mode %s; cache_describe reads them in binary): %s", ErrTextStyle, mode, strings.Join(fix, "; "))
}
