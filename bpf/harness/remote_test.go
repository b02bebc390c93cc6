package harness

import "testing"

// TestOtherCPU: the remote stage's CPU is another CPU the process may run
// on, below the measuring one, wrapping; none with one CPU allowed (under
// taskset -c 1, CPU 0 is not a choice).
func TestOtherCPU(t *testing.T) {
	for _, tc := range []struct {
		cpu     int
		allowed []int
		want    int
	}{
		{1, []int{0, 1}, 0},
		{0, []int{0, 1}, 1},
		{3, []int{1, 3}, 1},
		{1, []int{1, 3}, 3},
		{1, []int{1}, -1},
		{2, []int{0, 1}, -1}, // not allowed itself
		{5, []int{2, 5, 7}, 2},
	} {
		if got := OtherCPU(tc.cpu, tc.allowed); got != tc.want {
			t.Errorf("OtherCPU(%d, %v) = %d, want %d", tc.cpu, tc.allowed, got, tc.want)
		}
	}
}
