package bench

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// watchQueues reads the queues through w every interval on a connection
// of its own (application_name millrace-bench-watch) until ctx ends, as a
// dashboard page left open would, and returns what the reads took. A read
// that fails is counted; the next one dials again if the connection went.
func watchQueues(ctx context.Context, url string, every time.Duration, w Watcher) *WatchStats {
	st := &WatchStats{EveryS: every.Seconds()}
	var took []time.Duration
	var conn *pgx.Conn
	// The reads' backend CPU, when the server runs on this machine: read
	// after each read (a backend's CPU goes with it when its connection is
	// lost); base holds the CPU of the backends left before.
	var base, cur int64
	local := true
	backendTicks := func() {
		pid := int(conn.PgConn().PID())
		f := procStat(pid)
		if len(f) < 13 || parentOf(pid) == 0 {
			local = false
			return
		}
		cur = cpuTicks(f)
	}
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	began := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if local && st.Reads > 0 {
				// clock ticks are 1/100 s on Linux (as the sampler's CPU)
				st.ServerCPUPct = round(100 * float64(base+cur) * 10 / float64(time.Since(began).Milliseconds()))
			}
			if len(took) > 0 {
				slices.Sort(took)
				st.ReadP50MS = durMS(took[len(took)/2])
				st.ReadMaxMS = durMS(took[len(took)-1])
			}
			return st
		case <-t.C:
		}
		readBegan := time.Now()
		if conn != nil && conn.IsClosed() {
			conn = nil
			base, cur = base+cur, 0
		}
		if conn == nil {
			cfg, err := pgx.ParseConfig(url)
			if err != nil {
				st.Errors++
				st.LastError = err.Error()
				continue
			}
			cfg.RuntimeParams["application_name"] = "millrace-bench-watch"
			benchSession(cfg)
			if conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
				conn = nil
				if ctx.Err() == nil {
					st.Errors++
					st.LastError = err.Error()
				}
				continue
			}
		}
		if err := w.WatchQueues(ctx, conn); err != nil {
			if ctx.Err() == nil {
				st.Errors++
				st.LastError = err.Error()
			}
			continue
		}
		st.Reads++
		took = append(took, time.Since(readBegan))
		backendTicks()
	}
}

// durMS is d in milliseconds, to a tenth.
func durMS(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }
