// Package mark is the guest's half of the anatomy of a run: what
// executes per repetition of a row, counted by kind (calls, returns,
// retpoline and return thunks, kCFI checks, fences) by a QEMU TCG plugin
// in an instruction-counting guest (tools/anatomy, docs/icount.md#anatomy).
//
// The engine brackets every test_run call with Open and Close, two marks
// the plugin recognises by their bytes, and, when BPFBENCH_ANATOMY names a
// file (tools/vmexec gives a serial port), logs in the run's Log which
// row, stream and repetition count each window was, and the symbols of
// the BPF code then loaded. The log is kept in memory and written by
// Flush, outside any window: a write to a serial port finishes with
// interrupts that would land in the next window.
package mark
