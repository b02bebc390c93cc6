// Package gauge reads the state of the measuring core right after a
// call: its clock rate, from a chain of dependent multiplications, and
// its load, from a pointer chase and a throughput-bound loop over that
// chain (the caches and the execution ports), so that a cost can be
// given in cycles of the rate it ran at and the calls made while
// something else took the core can be left out (Contention). A leaf
// under the measuring engine; docs/method.md#contention is the
// rationale.
package gauge
