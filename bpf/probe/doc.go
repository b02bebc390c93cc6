// Package probe answers "does this kernel have X" (live-frames test_run,
// tracing programs, kprobes, a kfunc, the trampoline's cap, an emulated
// or instruction-counting guest) and holds the skip rule (SkipReason): a
// missing feature skips naming it, a load the host's policy refused skips
// naming the refusal, any other error fails.
package probe
