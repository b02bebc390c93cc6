// Package sched is what the suite reads of, and asks of, the kernel's
// scheduler: the CPU time of the measuring thread and of the threads that
// do a measured path's work elsewhere, the CPU a thread runs on and
// pinning it to one, and /proc/stat's per-CPU ticks with the share the
// host stole. A leaf, so that the measuring engine, the traffic rigs and
// the interface benchmarks read the same clocks.
package sched
