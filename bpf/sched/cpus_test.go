package sched

import (
	"strings"
	"testing"
)

func TestPickCPU(t *testing.T) {
	for _, c := range []struct {
		want    int
		allowed []int
		got     int
		err     string
	}{
		{-1, []int{0, 1}, 1, ""},
		{-1, []int{1}, 1, ""}, // taskset -c 1: NumCPU is 1, the CPU is 1
		{1, []int{1}, 1, ""},
		{0, []int{1}, 0, "CPU 0 is not among"},
		{3, []int{0, 2, 3}, 3, ""},
		{1, []int{0, 2, 3}, 0, "CPU 1 is not among"},
		{-1, nil, 0, "no CPU"},
	} {
		got, err := PickCPU(c.want, c.allowed)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("PickCPU(%d, %v) = %d, %v; want an error saying %q", c.want, c.allowed, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.got {
			t.Errorf("PickCPU(%d, %v) = %d, %v; want %d", c.want, c.allowed, got, err, c.got)
		}
	}
}

func TestAllowedCPUs(t *testing.T) {
	cpus, err := AllowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("AllowedCPUs = %v, %v", cpus, err)
	}
	// Pinning to each is allowed.
	for _, cpu := range cpus {
		if err := Pinned(cpu, func() error { return nil }); err != nil {
			t.Errorf("pin to allowed CPU %d: %v", cpu, err)
		}
	}
}
