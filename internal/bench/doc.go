// Package bench runs the strategies of `millrace bench` one after another
// through the same scenario on one PostgreSQL server: each fed by a
// producer at a fixed rate (with a mix of special jobs: failing, snoozed,
// cancelled, scheduled, unique), its jobs followed by a tracker that finds
// any lost or run twice, the server watched by a sampler; a run writes
// timeseries.jsonl and summary.json.
//
// A strategy is a Strategy: the classic ones are in package classic, the
// millrace client in package native, River in the program bench/river.
// Package cli is the command (flags, the embedded cluster), package report
// draws the charts.
package bench
