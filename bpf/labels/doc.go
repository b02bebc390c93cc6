// Package labels reads the facts of a run that do not change inside it
// (kernel, CPU, mitigations, CFI, JIT and accounting settings) from
// /proc, /sys and the kernel's config, and writes them as benchfmt
// configuration lines, so that benchstat can compare kernels and boots.
// A fact it cannot read is "unknown (why)", never a guess.
package labels
