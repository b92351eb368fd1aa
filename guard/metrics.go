package guard

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	ageXIDs    *prometheus.GaugeVec
	ageSeconds *prometheus.GaugeVec
	dead       *prometheus.GaugeVec
	actions    *prometheus.CounterVec
	pollErrors prometheus.Counter
}

// newMetrics creates the guard's metrics and registers them with r (when
// not nil). A collector already registered by another guard is reused.
func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		ageXIDs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "millrace_guard_oldest_xmin_age_xids",
			Help: "Age in transactions of the oldest xmin held, by source (session, standby, slot, prepared); 0 when none.",
		}, []string{"source"}),
		ageSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "millrace_guard_oldest_xmin_age_seconds",
			Help: "Longest time any holder of the given source has held the horizon, in seconds; 0 when none.",
		}, []string{"source"}),
		dead: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "millrace_guard_dead_tuples",
			Help: "n_dead_tup of the watched tables (or the hottest tables) in the guard's database.",
		}, []string{"table"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "millrace_guard_actions_total",
			Help: "Actions taken by the guard by class and action (warn, cancel, terminate, drop_slot, rollback_prepared; would_* in dry run).",
		}, []string{"class", "action"}),
		pollErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "millrace_guard_poll_errors_total",
			Help: "Polls that failed (the guard retries at the next interval).",
		}),
	}
	if r == nil {
		return m
	}
	m.ageXIDs = register(r, m.ageXIDs)
	m.ageSeconds = register(r, m.ageSeconds)
	m.dead = register(r, m.dead)
	m.actions = register(r, m.actions)
	m.pollErrors = register(r, m.pollErrors)
	return m
}

func register[C prometheus.Collector](r prometheus.Registerer, c C) C {
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

func (m *metrics) observe(s *Snapshot) {
	for _, src := range Sources {
		var xids int64
		var secs float64
		for i := range s.Holders {
			h := &s.Holders[i]
			if h.Source != src {
				continue
			}
			if h.AgeXIDs > xids {
				xids = h.AgeXIDs
			}
			if a := h.Age.Seconds(); a > secs {
				secs = a
			}
		}
		m.ageXIDs.WithLabelValues(string(src)).Set(float64(xids))
		m.ageSeconds.WithLabelValues(string(src)).Set(secs)
	}
	m.dead.Reset()
	for _, t := range s.Tables {
		m.dead.WithLabelValues(t.Name).Set(float64(t.DeadTuple))
	}
}
