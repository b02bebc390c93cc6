package probe

import (
	"sync"

	"bpfbench/bpf/labels"
)

// Emulated reports whether the suite runs on an emulated CPU (QEMU's TCG),
// as the virt label says: the guests of tools/vmexec set BPFBENCH_VIRT=tcg,
// and QEMU's TCG CPU model is also recognised by name. An emulated guest's
// clocks advance at the emulator's pace: the thread CPU time the suite
// measures and the kernel's own loop timer disagree there by 10-40% from
// one run to the next (seen on Debian 5.10, 6.1 and 6.12 under TCG), so
// timings from it show only that the code ran, never what it costs.
var Emulated = sync.OnceValue(func() bool {
	for _, l := range labels.All() {
		if l.Key == "virt" {
			return l.Value == "tcg"
		}
	}
	return false
})
