package probe

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// SkipReason is the skip rule: an error saying the kernel lacks a feature
// (ebpf.ErrNotSupported) skips, naming the feature, and one saying the
// host's policy refused it (ErrRefused) skips, saying where it runs; a
// benchmark that cannot run on this kernel is not a failure. It returns
// why err skips what was doing, or "" when err is nil or must fail.
func SkipReason(err error, doing string) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Sprintf("%s: this kernel lacks the feature: %v", doing, err)
	case errors.Is(err, ErrRefused):
		return fmt.Sprintf("%s: %v", doing, err)
	}
	return ""
}

// Require skips tb by the skip rule (SkipReason) and fails it on any
// other error. A run's benchmarks use the run's record instead
// (measure.Record.Require), which keeps the reason for the summary.
func Require(tb testing.TB, err error, doing string) {
	tb.Helper()
	if err == nil {
		return
	}
	if why := SkipReason(err, doing); why != "" {
		tb.Skip(why)
	}
	tb.Fatalf("%s: %v", doing, err)
}
