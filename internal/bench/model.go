package bench

// Phase names, in the order a run goes through them. A phase of length zero
// is skipped. Burndown is the throughput mode: jobs bulk-inserted first, then
// worked down with no producer.
const (
	PhaseWarmup   = "warmup"
	PhaseClean    = "clean"
	PhaseStress   = "stress"
	PhaseRecovery = "recovery"
	PhaseBurndown = "burndown"
)

// Sample is one line of timeseries.jsonl: what the sampler saw during one
// second of one strategy's run.
type Sample struct {
	Strategy string  `json:"strategy"`
	Phase    string  `json:"phase"`
	T        float64 `json:"t"` // seconds since the strategy's run started
	Unix     float64 `json:"unix"`

	Offered   int64 `json:"offered"`   // jobs the schedule called for this second
	Enqueued  int64 `json:"enqueued"`  // jobs whose enqueue committed this second
	Completed int64 `json:"completed"` // jobs whose work started and finished this second
	Backlog   int64 `json:"backlog"`   // enqueued minus completed, from client counters

	ClaimP50 float64 `json:"claim_p50_ms"`
	ClaimP99 float64 `json:"claim_p99_ms"`
	ClaimMax float64 `json:"claim_max_ms"`
	E2EP50   float64 `json:"e2e_p50_ms"`
	E2EP99   float64 `json:"e2e_p99_ms"`
	// PickupP50 and PickupP99 are the pickup latency the strategy's own
	// library reports (Env.ObservePickup; River's queue wait), left out
	// for strategies that report none.
	PickupP50 float64 `json:"pickup_p50_ms,omitempty"`
	PickupP99 float64 `json:"pickup_p99_ms,omitempty"`

	DeadTuples   int64 `json:"dead_tuples"`   // sum over the strategy's tables
	StorageBytes int64 `json:"storage_bytes"` // heap + indexes + TOAST of the strategy's tables
	// HistoryBytes is the part of StorageBytes in tables that keep
	// finished jobs for a retention (see Historian); 0 for strategies
	// without a history.
	HistoryBytes int64                 `json:"history_bytes,omitempty"`
	Tables       map[string]TableStats `json:"tables"`

	// Rotations is the number of segment rotations of the strategy during
	// this second (strategies that rotate, see Rotator; 0 otherwise).
	Rotations int64 `json:"rotations,omitempty"`

	XminAge        int64   `json:"xmin_age_xids"` // age in transactions of the oldest xmin
	XminAgeS       float64 `json:"xmin_age_s"`    // how long that horizon has been held
	XminHolder     string  `json:"xmin_holder"`   // e.g. "session pid 1234 (idle in transaction)"
	PgCPUPct       float64 `json:"pg_cpu_pct"`    // CPU of all Postgres processes, % of one core
	WALBytes       int64   `json:"wal_bytes"`     // WAL written this second
	WALBytesPerJob float64 `json:"wal_bytes_per_job"`

	Lost       int64 `json:"lost,omitempty"`       // known lost so far (set at the end)
	Duplicates int64 `json:"duplicates,omitempty"` // jobs worked more than once so far

	// With --mix: jobs cancelled while waiting and unique duplicates
	// reported as such this second (offered minus both is what should
	// run), the p99 of scheduled jobs' start minus run_at, and the
	// cancelled jobs that ran so far (unique duplicates that ran are
	// counted at the end, in the summary).
	Cancelled    int64   `json:"cancelled,omitempty"`
	Deduplicated int64   `json:"deduplicated,omitempty"`
	SchedLateP99 float64 `json:"sched_late_p99_ms,omitempty"`
	CancelledRun int64   `json:"cancelled_run,omitempty"`
}

// TableStats is the size and bloat of one table at one sample.
type TableStats struct {
	DeadTuples int64 `json:"n_dead_tup"`
	LiveTuples int64 `json:"n_live_tup"`
	HeapBytes  int64 `json:"heap_bytes"`
	IndexBytes int64 `json:"index_bytes"`
	TotalBytes int64 `json:"total_bytes"` // pg_total_relation_size: heap, indexes and TOAST
}

// Summary is summary.json: one run, for scripts.
type Summary struct {
	Scenario        string `json:"scenario"`
	PostgresVersion string `json:"postgres_version"`
	Rate            any    `json:"rate"` // jobs/s, or "max"
	// Workers is --workers, 0 when it was not given and each strategy ran
	// its default (StrategySummary.Workers says how many).
	Workers   int     `json:"workers"`
	Processes int     `json:"processes"`
	WorkMS    float64 `json:"work_ms"`
	// Mix is --mix (left out without one).
	Mix *Mix `json:"mix,omitempty"`
	// Pooler is --pooler and PGSettings the --pg-setting values the
	// bench's database ran with (left out when none).
	Pooler     string                      `json:"pooler,omitempty"`
	PGSettings []string                    `json:"pg_settings,omitempty"`
	Strategies map[string]*StrategySummary `json:"strategies"`
	// Interrupted is set when the run was interrupted (Ctrl-C): Strategies
	// then holds the strategies that ran, each with the phases it got to
	// (a phase cut short counts the seconds it ran; one that had not
	// run a full second is left out).
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is why a run that failed stopped (left out when it did not).
	Error string `json:"error,omitempty"`
	// Verdict is the run in one line, from its figures (see Verdict).
	Verdict string `json:"verdict,omitempty"`
}

// StrategySummary is one strategy's results in a Summary.
type StrategySummary struct {
	// Workers is the number of workers the strategy ran: --workers, or
	// the strategy's default when it was not given.
	Workers int `json:"workers"`
	// WorkersWhy is why it ran that many: WhyWorkersFlag,
	// WhyDefaultWorkers or WhyGoroutineWorkers.
	WorkersWhy    string                   `json:"workers_why,omitempty"`
	LostJobs      int64                    `json:"lost_jobs"`
	DuplicateJobs int64                    `json:"duplicate_jobs"`
	Phases        map[string]*PhaseSummary `json:"phases"`

	// EnqueueErrors counts enqueue calls that failed (their jobs are
	// neither counted as enqueued nor as lost).
	EnqueueErrors int64 `json:"enqueue_errors,omitempty"`
	// EnqueueLastError is what the last of them returned.
	EnqueueLastError string `json:"enqueue_last_error,omitempty"`
	// Readers counts the analytics scenario's reports over the whole run
	// (they run in the stress phase only, whose summary has the same).
	Readers *ReaderStats `json:"analytics_readers,omitempty"`
	// Watch is what reading the queues as the dashboard does cost
	// (--watch-queues): nil when not asked.
	Watch *WatchStats `json:"watch_queues,omitempty"`
	// PerProcessCompleted counts, per process (--processes), the jobs its
	// workers completed over the whole run.
	PerProcessCompleted []int64 `json:"per_process_completed"`
	// Stall describes the stall scenario's three stall sources.
	Stall *StallStats `json:"stall,omitempty"`
	// MostRunning is the most jobs the strategy's workers ran at once,
	// counted by the bench's own handler (from each job's start to its
	// end): under --limit running=N, at most N.
	MostRunning int64 `json:"most_running"`
	// MostStarted is, under --limit rate=N/PERIOD, the most jobs the
	// bench's own handler saw start within any window of PERIOD: at most N.
	MostStarted int64 `json:"most_started,omitempty"`
	// MostRunningPerKey is, under --limit per-key=N, the most jobs of any
	// one key the bench's own handler saw running at once: at most N.
	MostRunningPerKey int64 `json:"most_running_per_key,omitempty"`
	// MostStartedPerKey is, under --limit key-rate=N/PERIOD, the most jobs
	// of any one key the bench's own handler saw start within any window
	// of PERIOD: at most N.
	MostStartedPerKey int64 `json:"most_started_per_key,omitempty"`
	// HotDone is, under --limit hot=N, how many of the backlog's jobs ran
	// (their runs, not in the other counts and latencies).
	HotDone int64 `json:"hot_done,omitempty"`
	// Chaos is the chaos scenario's figures.
	Chaos *ChaosStats `json:"chaos,omitempty"`
	// Totals are the bench's own counts of the main stream over the whole
	// run, warm-up included.
	Totals *RunTotals `json:"totals"`
	// Metrics are what the strategy's Prometheus metrics counted over the
	// same run (--metrics-listen, strategies that implement
	// Instrumented), by series, to compare with Totals.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Mix counts what went wrong on the way with --mix (left out without
	// one).
	Mix *MixStats `json:"mix,omitempty"`
}

// RunTotals are a strategy's counts of the main stream over its whole run.
type RunTotals struct {
	Offered   int64 `json:"offered"`   // jobs the schedule called for (after the bulk insert, for burndown)
	Enqueued  int64 `json:"enqueued"`  // jobs whose enqueue committed
	Completed int64 `json:"completed"` // jobs whose work finished
}

// MixStats are a --mix run's figures that are not per phase.
type MixStats struct {
	// CancelMissed counts cancels that did not find their job waiting
	// (the job is then expected to run); UniqueNotDeduplicated inserts
	// with the key of an unfinished job that were stored anyway (or
	// reported as the duplicate of another job); UniqueSkipped duplicates
	// not inserted because their original was about to fall due;
	// SchedEarly scheduled jobs that started more than 1 ms before their
	// run_at. All should be 0.
	CancelMissed          int64 `json:"cancel_missed"`
	UniqueNotDeduplicated int64 `json:"unique_not_deduplicated"`
	UniqueSkipped         int64 `json:"unique_skipped"`
	SchedEarly            int64 `json:"sched_early"`
	// DrainS is how long the workers ran after the last phase until every
	// expected job had completed (at most MixDrain); DrainPending the
	// expected jobs still not completed then.
	DrainS       float64 `json:"drain_s"`
	DrainPending int64   `json:"drain_pending"`
	// PendingByKind counts, at the end, the jobs that should have run and
	// have not completed (backlog or lost), by kind and number of starts
	// ("fail ran 1"); left out when there are none.
	PendingByKind map[string]int64 `json:"pending_by_kind,omitempty"`
	// Notes describes the first defects and missed cancels seen (at most
	// 20), with their timings.
	Notes []string `json:"notes,omitempty"`
}

// StallStats describes one run of the stall scenario. Its jobs are counted
// in lost_jobs and duplicate_jobs but not in the main stream's offered,
// completed, backlog or latency figures.
type StallStats struct {
	// LongJobS is how long the stall-long job's work ran (it blocks until
	// the stress phase ends).
	LongJobS float64 `json:"long_job_s"`
	// HeldTxS is how long the transaction that enqueued a job at the
	// start of the stress phase stayed open before it committed.
	HeldTxS float64 `json:"held_tx_s"`
	// UnservedEnqueued counts the jobs enqueued on the unserved queue
	// during the stress phase; UnservedWorked those the drain after the
	// run worked, which took DrainS seconds.
	UnservedEnqueued int64   `json:"unserved_enqueued"`
	UnservedWorked   int64   `json:"unserved_worked"`
	DrainS           float64 `json:"drain_s"`
}

// PhaseSummary is one phase of one strategy. Latency percentiles come from
// HDR histograms over the whole phase, not from averaging per-second values.
type PhaseSummary struct {
	Seconds       float64 `json:"seconds"`
	OfferedPerS   float64 `json:"offered_per_s"`
	CompletedPerS float64 `json:"completed_per_s"`
	ClaimP50MS    float64 `json:"claim_p50_ms"`
	ClaimP99MS    float64 `json:"claim_p99_ms"`
	E2EP50MS      float64 `json:"e2e_p50_ms"`
	E2EP99MS      float64 `json:"e2e_p99_ms"`
	// PickupP50MS and PickupP99MS: the pickup latency the strategy's own
	// library reports (see Sample.PickupP50), left out when it reports none.
	PickupP50MS    float64 `json:"pickup_p50_ms,omitempty"`
	PickupP99MS    float64 `json:"pickup_p99_ms,omitempty"`
	BacklogEnd     int64   `json:"backlog_end"`
	BacklogMax     int64   `json:"backlog_max"`
	DeadTuplesMax  int64   `json:"dead_tuples_max"`
	XminAgeMaxS    float64 `json:"xmin_age_max_s"`
	PgCPUPct       float64 `json:"pg_cpu_pct"`
	WALBytesPerJob float64 `json:"wal_bytes_per_job"`
	// StorageBytesMax is the largest per-second sum of pg_total_relation_size
	// (heap, indexes, TOAST) over the strategy's tables during the phase.
	StorageBytesMax int64 `json:"storage_bytes_max"`
	// HistoryBytesMax is the largest per-second storage of the tables
	// that keep finished jobs (see Historian), included in
	// StorageBytesMax; left out for strategies without a history.
	HistoryBytesMax int64 `json:"history_bytes_max,omitempty"`
	// Rotations counts the segment rotations during the phase; nil (left
	// out) for strategies that do not rotate (see Rotator).
	Rotations *int64 `json:"rotations,omitempty"`

	// Offered counts the jobs offered during the phase; Expected those of
	// them that should run (offered minus those cancelled while waiting
	// and those inserted as unique duplicates, with --mix); Completed
	// those of them whose work (their final run, for jobs that fail or
	// snooze once) finished by the end of the run, after it too. Jobs
	// are counted in the phase they were offered in, wherever they ran.
	Offered   int64 `json:"offered"`
	Expected  int64 `json:"expected"`
	Completed int64 `json:"completed"`

	// With --mix only (left out otherwise), counted by the phase jobs
	// were offered in except the latencies (the phase the job started
	// in): jobs cancelled while waiting and unique duplicates reported as
	// such; the p99 and maximum of a scheduled job's start minus its
	// run_at; the p99 of a failed or snoozed job's second start minus
	// when it fell due again; and the defects: cancelled jobs that ran,
	// and unique duplicates that ran (or an original that ran twice).
	Cancelled      *int64   `json:"cancelled,omitempty"`
	Deduplicated   *int64   `json:"deduplicated,omitempty"`
	SchedLateP99MS *float64 `json:"sched_late_p99_ms,omitempty"`
	SchedLateMaxMS *float64 `json:"sched_late_max_ms,omitempty"`
	RetryLateP99MS *float64 `json:"retry_late_p99_ms,omitempty"`
	CancelledRun   *int64   `json:"cancelled_run,omitempty"`
	UniqueDupesRun *int64   `json:"unique_dupes_run,omitempty"`

	// Readers counts the analytics scenario's reports during the phase
	// (the stress phase of that scenario; nil otherwise).
	Readers *ReaderStats `json:"readers,omitempty"`
}

// WatchStats are the reads of --watch-queues: what the dashboard's queues
// page reads each second (every queue's counts, oldest waiting job and
// rate; the last second's activity), made every EveryS seconds on a
// connection of the bench's own while the strategy runs.
type WatchStats struct {
	EveryS    float64 `json:"every_s"`
	Reads     int64   `json:"reads"`
	Errors    int64   `json:"errors"`
	ReadP50MS float64 `json:"read_p50_ms"`
	ReadMaxMS float64 `json:"read_max_ms"`
	// ServerCPUPct is the CPU of the reads' server backend, in percent of
	// a core over the run (as pg_cpu_pct), when the server runs on this
	// machine.
	ServerCPUPct float64 `json:"server_cpu_pct,omitempty"`
	// LastError is the newest failed read's error.
	LastError string `json:"last_error,omitempty"`
}
