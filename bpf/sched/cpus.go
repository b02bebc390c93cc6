package sched

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// allowed are the CPUs the process may run on, read as the package is
// initialised, before any thread is pinned: its affinity mask (taskset,
// a cpuset, isolcpus), in order.
var allowed, allowedErr = readAllowed()

func readAllowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for cpu := range 64 * len(set) {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// AllowedCPUs are the CPUs the process may run on, as it started.
func AllowedCPUs() ([]int, error) { return slices.Clone(allowed), allowedErr }

// PickCPU is the CPU to measure on: want when the process may run on it,
// and with want -1 the last CPU it may run on. runtime.NumCPU counts the
// allowed CPUs, not their numbers: under taskset -c 1 it is 1, and CPU 0
// is not allowed.
func PickCPU(want int, allowed []int) (int, error) {
	if len(allowed) == 0 {
		return 0, fmt.Errorf("no CPU in the process's affinity mask")
	}
	if want == -1 {
		return allowed[len(allowed)-1], nil
	}
	if !slices.Contains(allowed, want) {
		return 0, fmt.Errorf("CPU %d is not among the CPUs this process may run on (%v)", want, allowed)
	}
	return want, nil
}
