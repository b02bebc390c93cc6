package probe

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		err                error
		wantSkip, wantFail bool
	}{
		{nil, false, false},
		{fmt.Errorf("load: %w", ebpf.ErrNotSupported), true, false},
		{errors.New("permission denied"), false, true},
		{fmt.Errorf("run: %w", ErrRefused), true, false},
	} {
		ft := &fakeTB{TB: t}
		func() {
			defer func() { recover() }() // Skipf and Fatalf end the call
			Require(ft, tc.err, "doing")
		}()
		if ft.skipped != tc.wantSkip || ft.failed != tc.wantFail {
			t.Errorf("Require(%v): skipped=%v failed=%v, want %v %v", tc.err, ft.skipped, ft.failed, tc.wantSkip, tc.wantFail)
		}
	}
}

// fakeTB records Skipf and Fatalf instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = true
	panic("skip")
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	panic("fatal")
}
