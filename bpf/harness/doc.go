// Package harness is what the families of bench share to measure,
// report and tell their rows: the families whose path ends on a second
// CPU (Remote, a table of RemoteRows), the meter of that CPU's stage
// (Stage), and a traffic row's words (TrafficWords, Say) and a stage's
// figures. It lives outside the test files so that go doc and other
// packages see it, after cilium/ebpf's internal/testutils; bench/*_test.go
// hold the families' tables.
package harness
