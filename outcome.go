package millrace

// A worker decides a job's outcome by what it returns: nil completes it,
// an error fails the attempt (retried with backoff until its last), and the
// errors made here decide otherwise. The Is* predicates read them back.

import (
	"errors"
	"time"

	"github.com/millrace/millrace/internal/pool"
)

// JobSnooze, returned by a worker, runs the job again after d without
// counting this attempt (for "not yet": a resource is busy, a rate limit).
func JobSnooze(d time.Duration) error { return &pool.Snooze{Delay: d} }

// JobCancel, returned by a worker, finishes the job as cancelled: it never
// runs again, whatever attempts it has left. err says why (may be nil) and
// is kept in history.
func JobCancel(err error) error { return &pool.Cancel{Err: err} }

// JobDiscard, returned by a worker, finishes the job as discarded at once,
// whatever attempts it has left (an error retrying cannot fix). err is
// kept in history.
func JobDiscard(err error) error { return &pool.Discard{Err: err} }

// IsSnooze reports whether err is (or wraps) the outcome JobSnooze made,
// and the delay it asked for. With IsCancel and IsDiscard it lets a test
// (see package millracetest) say what a worker's returned error decides.
func IsSnooze(err error) (time.Duration, bool) {
	var sn *pool.Snooze
	if errors.As(err, &sn) {
		return sn.Delay, true
	}
	return 0, false
}

// IsCancel reports whether err is (or wraps) the outcome JobCancel made.
// The reason given to JobCancel is wrapped: errors.Is and errors.As reach
// it.
func IsCancel(err error) bool {
	var cn *pool.Cancel
	return errors.As(err, &cn)
}

// IsDiscard reports whether err is (or wraps) the outcome JobDiscard made.
// The reason given to JobDiscard is wrapped: errors.Is and errors.As reach
// it.
func IsDiscard(err error) bool {
	var dc *pool.Discard
	return errors.As(err, &dc)
}
