package bpf

import "github.com/cilium/ebpf/rlimit"

// Kernels before 5.11 charge BPF maps and programs to the process's
// RLIMIT_MEMLOCK, 64 KiB by default on 5.10: the suite's loads then fail
// with EPERM. Lift the limit for this process at start-up, as cilium/ebpf
// recommends; on 5.11 and later, which charge the memory cgroup instead,
// RemoveMemlock does nothing. It fails only when the process may not raise
// its limit (not root), and then the loads fail naming MEMLOCK.
func init() { _ = rlimit.RemoveMemlock() }
