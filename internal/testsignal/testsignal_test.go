package testsignal_test

import (
	"testing"
	"time"

	"github.com/millrace/millrace/internal/testsignal"
)

func TestSignal(t *testing.T) {
	var s testsignal.Signal[int]
	s.Fire(1) // unarmed: nothing kept, nothing blocks
	if _, err := s.WaitErr(time.Millisecond); err == nil {
		t.Fatal("waiting on an unarmed signal did not fail")
	}
	s.Arm()
	go func() {
		for i := 1; i <= testsignal.Buffer+10; i++ {
			s.Fire(i) // never blocks, even past the buffer
		}
	}()
	if v := s.Wait(t, time.Minute); v != 1 {
		t.Fatalf("first value %d, want 1", v)
	}
	if v := s.Wait(t, time.Minute); v != 2 {
		t.Fatalf("second value %d, want 2", v)
	}
	var quiet testsignal.Signal[string]
	quiet.Arm()
	if _, err := quiet.WaitErr(10 * time.Millisecond); err == nil {
		t.Fatal("a signal never fired was waited for successfully")
	}
}
