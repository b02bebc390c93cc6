package probe

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
)

// Require fails tb on err, except that an error saying the kernel lacks a
// feature (ebpf.ErrNotSupported) skips, naming the feature: a benchmark
// that cannot run on this kernel is not a failure, and any other error is.
func Require(tb testing.TB, err error, doing string) {
	tb.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ebpf.ErrNotSupported):
		Skipf(tb, "%s: this kernel lacks the feature: %v", doing, err)
	default:
		tb.Fatalf("%s: %v", doing, err)
	}
}
