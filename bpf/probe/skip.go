package probe

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
)

// Require fails tb on err, except that an error saying the kernel lacks a
// feature (ebpf.ErrNotSupported) skips, naming the feature, and one saying
// the host's policy refused it (ErrRefused) skips, saying where it runs: a
// benchmark that cannot run on this kernel is not a failure, and any other
// error is.
func Require(tb testing.TB, err error, doing string) {
	tb.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ebpf.ErrNotSupported):
		Skipf(tb, "%s: this kernel lacks the feature: %v", doing, err)
	case errors.Is(err, ErrRefused):
		Skipf(tb, "%s: %v; it runs in a guest: make kernels vmdeps, then make vmtest KERNEL=7.3", doing, err)
	default:
		tb.Fatalf("%s: %v", doing, err)
	}
}
