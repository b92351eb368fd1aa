package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// probe reads, on its own connection, what the server says about one
// strategy's tables and about the horizon: the database half of a Sample.
type probe struct {
	conn    *pgx.Conn
	url     string
	tables  []string
	history map[string]bool // those of tables that keep finished jobs (see Historian)

	postmaster int                  // pid of the local postmaster, 0 when the server is not local
	cpuTicks   int64                // Postgres processes' CPU ticks at the last read
	cpuAt      time.Time            // when cpuTicks was read
	walLSN     int64                // WAL position at the last read
	firstSeen  map[string]time.Time // holder+xmin -> when first seen, for holders without a start time
	nexts      []xidAt              // the next xid at each read, oldest first
}

// xidAt is the next xid to be assigned at one moment.
type xidAt struct {
	at   time.Time
	next int64
}

// recordNext adds one reading of the next xid.
func (p *probe) recordNext(at time.Time, next int64) {
	if n := len(p.nexts); n > 0 && next < p.nexts[n-1].next {
		p.nexts = p.nexts[:0] // another server: start over
	}
	if len(p.nexts) >= 200000 {
		p.nexts = append(p.nexts[:0], p.nexts[len(p.nexts)/2:]...)
	}
	p.nexts = append(p.nexts, xidAt{at, next})
}

// assigned estimates when xid was assigned: between the last reading whose
// next xid was at most xid and the first after, in proportion. It reports
// false when xid was assigned before the first reading.
func (p *probe) assigned(xid int64) (time.Time, bool) {
	i := sort.Search(len(p.nexts), func(i int) bool { return p.nexts[i].next > xid })
	switch {
	case i == 0:
		return time.Time{}, false
	case i == len(p.nexts):
		return p.nexts[i-1].at, true
	}
	a, b := p.nexts[i-1], p.nexts[i]
	f := float64(xid-a.next) / float64(b.next-a.next)
	return a.at.Add(time.Duration(f * float64(b.at.Sub(a.at)))), true
}

// dialProbe opens the sampler's connection.
func dialProbe(ctx context.Context, url string, tables, history []string) (*probe, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "millrace-bench-sampler"
	benchSession(cfg)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &probe{conn: conn, url: url, tables: tables, history: map[string]bool{}, firstSeen: map[string]time.Time{}}
	for _, t := range history {
		p.history[t] = true
	}
	var checkpointer int
	if conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`).Scan(&checkpointer) == nil {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", checkpointer)); strings.TrimSpace(string(comm)) == "postgres" {
			p.postmaster = parentOf(checkpointer) // the server runs on this machine
		}
	}
	p.cpuTicks, p.cpuAt = p.cpu(), time.Now()
	_ = conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&p.walLSN)
	return p, nil
}

// benchSession makes cfg a session of the bench's own (setup, sampler):
// the settings under test (--pg-setting) are for the strategies' sessions,
// not for what measures them.
func benchSession(cfg *pgx.ConnConfig) {
	for _, k := range []string{"statement_timeout", "idle_session_timeout", "idle_in_transaction_session_timeout", "lock_timeout"} {
		cfg.RuntimeParams[k] = "0"
	}
	cfg.RuntimeParams["default_transaction_isolation"] = "read committed"
}

func (p *probe) close() { p.conn.Close(context.Background()) }

const tableStatsSQL = `
SELECT s.schemaname || '.' || s.relname, s.n_dead_tup, s.n_live_tup,
       coalesce(pg_relation_size(s.relid), 0), coalesce(pg_indexes_size(s.relid), 0),
       coalesce(pg_total_relation_size(s.relid), 0)
FROM pg_stat_user_tables s
WHERE s.schemaname || '.' || s.relname = ANY($1)`

// horizonSQL lists what holds back the horizon of this database, oldest
// first: sessions of this database (their snapshot or their xid),
// standbys through hot_standby_feedback, replication slots and prepared
// transactions. Seconds are known for sessions and prepared transactions;
// for the others the probe remembers when it first saw that xmin. A
// session's xmin is the older of its snapshot's xmin and its own xid.
const horizonSQL = `
WITH h(holder, xmin, age_xids, held_s) AS (
  SELECT format('session pid %s (%s%s): %s', pid, coalesce(state, '?'),
                coalesce(', ' || nullif(application_name, ''), ''),
                left(regexp_replace(query, '\s+', ' ', 'g'), 60)),
         (CASE WHEN backend_xid IS NULL OR age(backend_xmin) > age(backend_xid)
               THEN backend_xmin ELSE backend_xid END)::text,
         greatest(age(backend_xmin), age(backend_xid)),
         extract(epoch FROM clock_timestamp() - xact_start)::float8
  FROM pg_stat_activity
  WHERE datname = current_database() AND pid <> pg_backend_pid()
    AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
  UNION ALL
  SELECT format('standby %s (hot_standby_feedback)', coalesce(nullif(application_name, ''), client_addr::text, pid::text)),
         backend_xmin::text, age(backend_xmin), NULL
  FROM pg_stat_replication WHERE backend_xmin IS NOT NULL
  UNION ALL
  SELECT format('replication slot %s (%s)', slot_name, CASE WHEN active THEN 'active' ELSE 'inactive' END),
         xmin::text, age(xmin), NULL
  FROM pg_replication_slots WHERE xmin IS NOT NULL
  UNION ALL
  SELECT format('prepared transaction %s', gid), transaction::text, age(transaction),
         extract(epoch FROM clock_timestamp() - prepared)::float8
  FROM pg_prepared_xacts
)
SELECT holder, xmin, age_xids, held_s FROM h ORDER BY age_xids DESC NULLS LAST, held_s DESC NULLS LAST LIMIT 1`

// read fills the database fields of s.
func (p *probe) read(ctx context.Context, s *Sample) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if p.conn.IsClosed() {
		// The server restarted (the chaos scenario), or the connection
		// was lost: a new one, and the postmaster anew.
		np, err := dialProbe(ctx, p.url, p.tables, nil)
		if err != nil {
			return err
		}
		p.conn, p.postmaster, p.cpuTicks, p.cpuAt, p.walLSN = np.conn, np.postmaster, np.cpuTicks, np.cpuAt, np.walLSN
	}
	rows, err := p.conn.Query(ctx, tableStatsSQL, p.tables)
	if err != nil {
		return err
	}
	s.Tables = map[string]TableStats{}
	for rows.Next() {
		var name string
		var ts TableStats
		if err := rows.Scan(&name, &ts.DeadTuples, &ts.LiveTuples, &ts.HeapBytes, &ts.IndexBytes, &ts.TotalBytes); err != nil {
			rows.Close()
			return err
		}
		s.Tables[name] = ts
		s.DeadTuples += ts.DeadTuples
		s.StorageBytes += ts.TotalBytes
		if p.history[name] {
			s.HistoryBytes += ts.TotalBytes
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}

	// The next xid to be assigned, recorded to date the horizon's xmin.
	var next int64
	if err := p.conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&next); err != nil {
		return err
	}
	p.recordNext(time.Now(), next)

	var holder, xmin string
	var age *int64
	var held *float64
	err = p.conn.QueryRow(ctx, horizonSQL).Scan(&holder, &xmin, &age, &held)
	switch {
	case err == pgx.ErrNoRows:
	case err != nil:
		return err
	default:
		now := time.Now()
		if age != nil {
			s.XminAge = *age
		}
		// How long the horizon has been held: since its xmin was assigned.
		// A session's transaction start is not enough: a snapshot taken
		// while another transaction held an xid has that xid as its xmin,
		// and keeps it after that transaction ends, so a session a second
		// old can hold a horizon many seconds old (overlapping readers that
		// hold xids). So the probe records the next xid once a sample and
		// dates the horizon's xmin by when the next xid passed it; before
		// that record begins, by the holder's transaction start, or (a
		// standby, a slot) when the probe first saw that xmin.
		var since time.Time
		if held != nil {
			since = now.Add(-time.Duration(*held * float64(time.Second)))
		} else {
			key := holder + "@" + xmin
			first, ok := p.firstSeen[key]
			if !ok {
				if len(p.firstSeen) > 100000 {
					clear(p.firstSeen)
				}
				first = now
				p.firstSeen[key] = now
			}
			since = first
		}
		if age != nil && next > 0 {
			if t, ok := p.assigned(next - *age); ok && t.Before(since) {
				since = t
			}
		}
		s.XminAgeS = now.Sub(since).Seconds()
		s.XminHolder = holder
	}

	var lsn int64
	if err := p.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&lsn); err != nil {
		return err
	}
	s.WALBytes, p.walLSN = lsn-p.walLSN, lsn
	if s.Completed > 0 {
		s.WALBytesPerJob = float64(s.WALBytes) / float64(s.Completed)
	}

	if p.postmaster != 0 {
		ticks, at := p.cpu(), time.Now()
		if secs := at.Sub(p.cpuAt).Seconds(); secs > 0 {
			// USER_HZ is 100 on Linux: a tick is 10 ms, so ticks per
			// second are already a percentage of one core.
			s.PgCPUPct = float64(ticks-p.cpuTicks) / secs
		}
		p.cpuTicks, p.cpuAt = ticks, at
	}
	return nil
}

// cpu sums user and system CPU ticks of the postmaster and its children,
// including the children that have exited (the postmaster's cutime and
// cstime), so that a backend ending does not take its CPU out of the total.
func (p *probe) cpu() int64 {
	if p.postmaster == 0 {
		return 0
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var total int64
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		f := procStat(pid)
		if len(f) < 15 { // through cstime
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if pid != p.postmaster && ppid != p.postmaster {
			continue
		}
		total += cpuTicks(f)
		if pid == p.postmaster {
			cut, _ := strconv.ParseInt(f[13], 10, 64)
			cst, _ := strconv.ParseInt(f[14], 10, 64)
			total += cut + cst
		}
	}
	return total
}

// procStat returns the fields of /proc/PID/stat after the command name
// (state first), or nil.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// cpuTicks is the user and system CPU, in clock ticks, of the fields of
// a /proc/PID/stat (procStat; at least 13 of them).
func cpuTicks(f []string) int64 {
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

// parentOf returns pid's parent pid, or 0 when pid is not a local process.
func parentOf(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
