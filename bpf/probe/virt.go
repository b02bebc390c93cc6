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
// disagree there from one run to the next (docs/kernels.md#kvm-or-emulation),
// so timings from it show only that the code ran, never what it costs.
func Emulated() bool {
	v := virt().name
	return v == "tcg" || v == labels.Icount
}

// Icount reports whether the guest's clocks count instructions (QEMU's
// -icount: virt label tcg-icount) and its shift: every executed
// instruction advances every clock by 2^shift ns, so what the suite
// measures as a time is a number of instructions.
func Icount() (shift int, ok bool) {
	v := virt()
	return v.shift, v.name == labels.Icount && v.shiftOK
}

// virt reads the labels once (they read /proc and, without a kernel
// config, all of /proc/kallsyms) for both questions.
var virt = sync.OnceValue(func() (v struct {
	name    string
	shift   int
	shiftOK bool
}) {
	for _, l := range labels.All() {
		switch l.Key {
		case "virt":
			v.name = l.Value
		case "icount-shift":
			n, err := strconv.Atoi(l.Value)
			v.shift, v.shiftOK = n, err == nil
		}
	}
	return v
})
