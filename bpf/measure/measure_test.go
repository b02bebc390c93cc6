package measure

import "testing"

func TestCheckKernel(t *testing.T) {
	for _, tc := range []struct {
		ns, kernel float64
		ok         bool
	}{
		{5.7, 5, true},
		{5.0, 5, true},
		{4.9, 5, true}, // noise below the truncated value
		{14.5, 14, true},
		{9.0, 5, false}, // we measured more than the kernel's loop
		{2.0, 5, false},
		{420, 5, false}, // a fixed cost leaked into ns/op
	} {
		err := Result{Ns: tc.ns, KernelNs: tc.kernel}.checkKernel()
		if (err == nil) != tc.ok {
			t.Errorf("checkKernel(ns=%v, kernel=%v) = %v, want ok=%v", tc.ns, tc.kernel, err, tc.ok)
		}
	}
}
