// Package testrun times one BPF_PROG_TEST_RUN repeat loop: a program, its
// input and the counter that proves it ran. A measurement is a long call
// less the fixed cost of a short one (the median of the loop's recent
// short calls), per repetition, in the thread's CPU time, checked against
// the kernel's own average and the program's run counter; a call the
// kernel abandoned, or whose clocks disagree, is taken again. The rounds
// engine (package measure) makes these measurements in balanced rounds.
// docs/method.md#how-a-number-is-made is the rationale.
package testrun
