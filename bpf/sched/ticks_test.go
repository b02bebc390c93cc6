package sched

import (
	"errors"
	"testing"
)

// TestStealTally: a tally that saw no tick knows nothing, and During hands
// back its function's error after counting the ticks it took.
func TestStealTally(t *testing.T) {
	var tally StealTally
	if _, ok := tally.Frac(); ok {
		t.Error("an empty tally gave a stolen share")
	}
	want := errors.New("visit failed")
	if err := tally.During(0, func() error { return want }); err != want {
		t.Errorf("During returned %v, want the visit's error", err)
	}
	if f, ok := tally.Frac(); ok && (f < 0 || f > 1) {
		t.Errorf("stolen share %v outside [0, 1]", f)
	}
}
