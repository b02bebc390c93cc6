// Package measure is the suite's one measuring engine. A family hands it
// streams of work (test_run repeat loops, frames of a traffic rig); it
// warms them up, sizes their calls, and measures them in rounds whose
// order is balanced, so that a variant and its baseline see the machine
// in the same states, and summarises the rounds robustly: a low quantile
// for a stream's own cost, the median paired difference with a block
// bootstrap interval, cycles of the clock rate each call ran at, and only
// the calls made while the core was uncontended. Family is the one entry:
// it spreads the test_run rows of a family over each other's time, and
// measures a row that needs setup of its own (Row.Start) in a stretch of
// its own. docs/method.md is the rationale.
package measure
