package probe

import (
	"testing"

	"bpfbench/bpf/host"
)

func TestHaveLiveFrames(t *testing.T) {
	host.RequireRoot(t)
	// Whatever the kernel, the answer is a verdict: nil, or a skip that
	// names the feature or the host's refusal. Any other error is a
	// broken probe.
	Require(t, HaveLiveFrames(), "probe live frames")
}
