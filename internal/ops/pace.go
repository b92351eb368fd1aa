package ops

import "time"

// CountsShare is the share of the time the dashboard's reads of the
// queues may take (ui's sampler, and the bench's --watch-queues that
// measures it).
const CountsShare = 0.05

// Pacer spaces a recurring read so that it takes at most a share of the
// time: after a read that began at t and took d, the next is due at
// t + d/Share. A reader that polls paces its costly reads with it, so
// that what it costs the database follows a budget, not the size of what
// it reads: the dashboard's live counts of a 40,000-job backlog take about
// 100 ms of a server core, and read every second at full speed they took a
// tenth of it.
type Pacer struct {
	// Share is the most of the time the reads may take (0.05: 5%).
	Share float64
	next  time.Time
}

// Due reports whether a read may begin at now.
func (p *Pacer) Due(now time.Time) bool { return !now.Before(p.next) }

// Took records a read that began at began and took d. A Share of 0 (the
// zero Pacer) or more than 1 paces nothing beyond the read itself.
func (p *Pacer) Took(began time.Time, d time.Duration) {
	share := p.Share
	if share <= 0 || share > 1 {
		share = 1
	}
	p.next = began.Add(time.Duration(float64(d) / share))
}

// Reset makes the next read due at once (after an action that changed
// what it reads).
func (p *Pacer) Reset() { p.next = time.Time{} }
