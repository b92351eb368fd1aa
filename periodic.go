package millrace

import (
	"errors"
	"fmt"
	"time"

	"github.com/millrace/millrace/internal/maint"
	"github.com/millrace/millrace/internal/storage"
	"github.com/robfig/cron/v3"
)

// PeriodicJob is a job the leader enqueues at every slot of a cron
// schedule. Each slot is enqueued exactly once across any number of
// processes and leader changes (a slot is recorded with the job, under a
// primary key); slots missed while no leader ran are skipped, not
// replayed, except that RunOnStart enqueues the latest one when the job
// has never run.
type PeriodicJob struct {
	// Name identifies the job's slots (default: the kind and schedule).
	Name string
	// Schedule is a cron expression: five fields (minute hour day month
	// weekday), six with a leading seconds field, or a descriptor such
	// as "@hourly" or "@every 30s". Times are in UTC unless the expression
	// starts with CRON_TZ=.
	Schedule string
	// Args are the job's arguments and Opts its insert options (RunAt and
	// Unique are ignored: the slot is the job's identity).
	Args JobArgs
	Opts *InsertOpts
	// RunOnStart enqueues the latest slot at once when the job never ran.
	RunOnStart bool
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (p PeriodicJob) check() error {
	if p.Args == nil {
		return errors.New("periodic job without Args")
	}
	if _, err := cronParser.Parse(p.Schedule); err != nil {
		return fmt.Errorf("schedule %q: %w", p.Schedule, err)
	}
	return nil
}

func (p PeriodicJob) name() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Args.Kind() + " " + p.Schedule
}

// periodicJobs makes the leader's view of Config.Periodic.
func (c *Client) periodicJobs() ([]maint.Periodic, error) {
	out := make([]maint.Periodic, 0, len(c.cfg.Periodic))
	for _, pj := range c.cfg.Periodic {
		sched, err := cronParser.Parse(pj.Schedule)
		if err != nil {
			return nil, err
		}
		pj := pj
		out = append(out, maint.Periodic{Name: pj.name(), Schedule: utcSchedule{sched}, RunOnStart: pj.RunOnStart,
			Job: func() (storage.NewJob, error) {
				p, err := c.params(pj.Args, pj.Opts)
				if err != nil {
					return storage.NewJob{}, err
				}
				p.Opts.RunAt, p.Opts.Unique = time.Time{}, nil
				return c.newJob(p, time.Time{}) // no unique key: no clock needed
			}})
	}
	return out, nil
}

// utcSchedule evaluates a cron schedule in UTC (unless it names a zone).
type utcSchedule struct{ cron.Schedule }

func (s utcSchedule) Next(t time.Time) time.Time { return s.Schedule.Next(t.UTC()) }
