package sched

import (
	"errors"
	"testing"
	"time"
)

// TestStealTally: a tally that saw no tick knows nothing, During hands
// back its function's error, and a tenth of a second gives a share.
func TestStealTally(t *testing.T) {
	var tally StealTally
	if _, ok := tally.Frac(); ok {
		t.Error("an empty tally gave a stolen share")
	}
	want := errors.New("visit failed")
	if err := tally.During(0, func() error { return want }); err != want {
		t.Errorf("During returned %v, want the visit's error", err)
	}
	// Ticks count idle time too: a tenth of a second passes some on any
	// CPU, busy or not.
	tally.During(0, func() error { time.Sleep(100 * time.Millisecond); return nil })
	if f, ok := tally.Frac(); !ok || f < 0 || f > 1 {
		t.Errorf("after 100 ms: stolen share %v (known %v), want one in [0, 1]", f, ok)
	}
}
