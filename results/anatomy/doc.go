// Package anatomy reads what an instruction-counting guest executed, block
// by block, inside the windows the suite marks around each test_run call
// (bpf/measure/mark, tools/anatomy/plugin), and turns it into a row's
// anatomy: per repetition, how many instructions, direct and indirect
// calls and jumps, returns, entries into retpoline, return and ITS thunks,
// fences and serialising instructions, kCFI and FineIBT checks and
// call-depth accounting ran, and in which functions the instructions
// were.
//
// A window holds one test_run call; a row's figure per repetition is a
// long call's window minus the short call's before it, divided by the
// repetitions between them, as the row's own instrs/op is made, and the
// median over the row's calls, which leaves out the few a context switch
// or a page fault landed in. Instructions are decoded on the host with
// golang.org/x/arch's x86 decoder; thunks are recognised by the symbol a
// block starts at, from the kernel's System.map placed where the guest's
// kallsyms says the kernel's text starts, and the guest's own log of
// module and BPF symbols. docs/icount.md#anatomy says how to read it.
package anatomy
