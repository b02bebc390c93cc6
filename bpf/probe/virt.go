package probe

import (
	"strconv"
	"sync"

	"bpfbench/bpf/labels"
)

// Emulated reports whether the suite runs on an emulated CPU (QEMU's TCG),
// as the virt label says: the guests of tools/vmexec set BPFBENCH_VIRT=tcg
// (or tcg-icount, see Icount), and QEMU's TCG CPU model is also recognised
// by name. An emulated guest's clocks advance at the emulator's pace: the
// thread CPU time the suite measures and the kernel's own loop timer
// disagree there by 10-40% from one run to the next (seen on Debian 5.10,
// 6.1 and 6.12 under TCG), so timings from it show only that the code ran,
// never what it costs.
var Emulated = sync.OnceValue(func() bool {
	v := label("virt")
	return v == "tcg" || v == labels.Icount
})

// Icount reports whether the guest's clocks count instructions (QEMU's
// -icount: virt label tcg-icount) and its shift: every executed
// instruction advances every clock by 2^shift ns, so what the suite
// measures as a time is a number of instructions.
var Icount = sync.OnceValues(func() (shift int, ok bool) {
	if label("virt") != labels.Icount {
		return 0, false
	}
	n, err := strconv.Atoi(label("icount-shift"))
	return n, err == nil
})

func label(key string) string {
	for _, l := range labels.All() {
		if l.Key == key {
			return l.Value
		}
	}
	return ""
}
