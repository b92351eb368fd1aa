package ui

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/millrace/millrace/internal/ops"
)

// jobView is a job or an attempt as the dashboard shows it: a running job
// counts the attempt it runs, its process is named host:pid when the
// database still knows it, and what came from its producer and its worker
// is redacted.
type jobView struct {
	ops.Job
	// Process is the process that works (or worked) the job: host:pid, or
	// "process N" when the process table does not have it (the process is
	// gone, or the role may not read millrace.process).
	Process string `json:"process,omitempty"`
}

// jobDetailView is ops.JobDetail as the dashboard shows it.
type jobDetailView struct {
	ID       int64     `json:"id"`
	Live     *jobView  `json:"live,omitempty"`
	Attempts []jobView `json:"attempts"`
	// RetriedAs is the job a retry of this one made (0: none): its page
	// links to it and offers no retry.
	RetriedAs int64 `json:"retried_as,omitempty"`
}

// Latest is the job's live row, else its newest attempt.
func (d *jobDetailView) Latest() *jobView {
	if d.Live != nil {
		return d.Live
	}
	if len(d.Attempts) > 0 {
		return &d.Attempts[len(d.Attempts)-1]
	}
	return nil
}

// Args are the job's arguments, as ops.JobDetail.Args picks them (nil:
// none kept).
func (d *jobDetailView) Args() json.RawMessage {
	if d.Live != nil && len(d.Live.Args) > 0 {
		return d.Live.Args
	}
	for i := len(d.Attempts) - 1; i >= 0; i-- {
		if len(d.Attempts[i].Args) > 0 {
			return d.Attempts[i].Args
		}
	}
	return nil
}

// views makes jobs into what the dashboard shows.
func (h *handler) views(ctx context.Context, jobs []ops.Job) []jobView {
	out := make([]jobView, len(jobs))
	var owners []int
	for i := range jobs {
		j := jobs[i]
		j.Args = redactJSON(j.Args)
		j.Error = redact(j.Error)
		j.Attempt = j.RunningAttempt() // a running job's row counts the attempts made before
		out[i].Job = j
		if j.Owner != nil && *j.Owner != 0 {
			owners = append(owners, *j.Owner)
		}
	}
	names := h.processNames(ctx, owners)
	for i := range out {
		if o := out[i].Owner; o != nil && *o != 0 {
			if n, ok := names[*o]; ok {
				out[i].Process = n
			} else {
				out[i].Process = "process " + strconv.Itoa(*o)
			}
		}
	}
	return out
}

// processNames maps process ids to host:pid (and the process's name when
// it has another) from millrace.process, which keeps the processes that
// are alive. millrace_admin may read it; for another role the map is
// empty.
func (h *handler) processNames(ctx context.Context, ids []int) map[int]string {
	out := map[int]string{}
	if len(ids) == 0 {
		return out
	}
	ps, err := ops.Processes(ctx, h.pool, ids)
	if err != nil {
		return out
	}
	for id, p := range ps {
		out[id] = redact(p.String())
	}
	return out
}

// getJob is ops.GetJob as the dashboard shows it.
func (h *handler) getJob(ctx context.Context, id int64) (jobDetailView, error) {
	d, err := ops.GetJob(ctx, h.pool, id)
	if err != nil {
		return jobDetailView{ID: id, Attempts: []jobView{}}, err
	}
	all := d.Attempts
	if d.Live != nil {
		all = append(append([]ops.Job{}, d.Attempts...), *d.Live)
	}
	v := h.views(ctx, all)
	out := jobDetailView{ID: d.ID, Attempts: v[:len(d.Attempts)], RetriedAs: d.RetriedAs}
	if d.Live != nil {
		out.Live = &v[len(v)-1]
	}
	return out, nil
}

// took is a run time with sub-second precision: 12.3 ms, 4.567 s, 2m3.456s.
func took(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d.Nanoseconds())/1000, 'f', 0, 64) + " µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s"
	}
	return d.Round(time.Millisecond).String()
}
