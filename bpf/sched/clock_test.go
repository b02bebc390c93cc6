package sched

import (
	"testing"
)

// TestKsoftirqdClocks: every CPU this process may run on has a ksoftirqd
// whose CPU-time clock reads, and it never runs backwards.
func TestKsoftirqdClocks(t *testing.T) {
	clocks, err := KsoftirqdClocks()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, cpu := range cpus {
		c, ok := clocks[cpu]
		if !ok {
			t.Errorf("no ksoftirqd clock for CPU %d: %v", cpu, clocks)
			continue
		}
		a, err := ClockNs(c)
		if err != nil {
			t.Fatalf("ksoftirqd/%d: %v", cpu, err)
		}
		b, err := ClockNs(c)
		if err != nil || b < a {
			t.Errorf("ksoftirqd/%d: clock read %d then %d (%v)", cpu, a, b, err)
		}
	}
}
