// Package testsignal lets production code tell a test that something
// happened (a poll round ended, a batch was acked), so that the test
// waits for that instead of sleeping. A Signal lives in the component that
// fires it; a test arms it before the component starts and waits on it.
// An unarmed Signal costs its Fire a nil check: production never arms one.
//
// It does not import package testing: it ships in binaries, which is why
// it is a package of its own and not part of the test kit (package
// testkit), which production code must not link.
package testsignal

import (
	"fmt"
	"time"
)

// Buffer is how many fired values an armed Signal keeps for its waiter;
// beyond that Fire drops values rather than block production code.
const Buffer = 1024

// Signal is a point in production code that a test can wait for, carrying
// a value of type T. The zero Signal is unarmed.
type Signal[T any] struct {
	ch chan T
}

// Arm makes s keep what Fire sends from now on. Call it before the
// component that fires s starts (it is not safe against a concurrent
// Fire).
func (s *Signal[T]) Arm() { s.ch = make(chan T, Buffer) }

// Fire records v for a waiting test; on an unarmed Signal it does nothing.
// It never blocks.
func (s *Signal[T]) Fire(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// Fataler is the part of testing.TB that Wait needs.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Wait returns the next value fired, failing t if none comes within
// timeout (a bound on a broken run, not a measure: make it generous).
func (s *Signal[T]) Wait(t Fataler, timeout time.Duration) T {
	t.Helper()
	v, err := s.WaitErr(timeout)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return v
}

// WaitErr is Wait that returns an error instead of failing a test.
func (s *Signal[T]) WaitErr(timeout time.Duration) (T, error) {
	var zero T
	if s.ch == nil {
		return zero, fmt.Errorf("testsignal: waiting on a %T that was never armed", s)
	}
	select {
	case v := <-s.ch:
		return v, nil
	case <-time.After(timeout):
		return zero, fmt.Errorf("testsignal: no %T fired within %v", s, timeout)
	}
}
