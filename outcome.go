package millrace

import (
	"errors"
	"time"

	"github.com/millrace/millrace/internal/pool"
)

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
