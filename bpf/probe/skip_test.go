package probe

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// TestSkipReason: a missing feature and a host refusal skip, saying which,
// and every other error fails.
func TestSkipReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // in the reason; "" for no skip
	}{
		{nil, ""},
		{fmt.Errorf("load: %w", ebpf.ErrNotSupported), "doing: this kernel lacks the feature: load: "},
		{errors.New("permission denied"), ""},
		{fmt.Errorf("run: %w; it runs in a guest", ErrRefused), "doing: run: refused by this host's policy, not a missing feature; it runs in a guest"},
	} {
		got := SkipReason(tc.err, "doing")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("SkipReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
