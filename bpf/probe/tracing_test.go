package probe

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"bpfbench/bpf"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// TestClassifyLoad: only EPERM without a verifier log is taken for a
// refusal; a missing feature and every other error keep their kind.
func TestClassifyLoad(t *testing.T) {
	ps := &ebpf.ProgramSpec{Type: ebpf.Tracing, SectionName: "fentry/bpf_get_numa_node_id"}
	for _, tc := range []struct {
		name                 string
		err                  error
		refused, unsupported bool
	}{
		{"eperm, no log", fmt.Errorf("load program: %w (MEMLOCK may be too low)", unix.EPERM), true, false},
		{"eperm, verifier log", &ebpf.VerifierError{Cause: unix.EPERM, Log: []string{"0: (b7) r0 = 0", "R1 is invalid"}}, false, false},
		{"eperm, empty verifier log", &ebpf.VerifierError{Cause: unix.EPERM}, true, false},
		{"eperm, the suite's own load, no log", fmt.Errorf("load: %w", &bpf.LoadError{Errno: unix.EPERM}), true, false},
		{"eperm, the suite's own load, verifier log", &bpf.LoadError{Errno: unix.EPERM, Log: "0: (85) call bpf_session_is_return#1\nR1 type=scalar expected=ctx"}, false, false},
		{"not supported", fmt.Errorf("load: %w", ebpf.ErrNotSupported), false, true},
		{"einval", fmt.Errorf("load: %w", unix.EINVAL), false, false},
	} {
		got := ClassifyLoad(tc.err, ps)
		if errors.Is(got, ErrRefused) != tc.refused || errors.Is(got, ebpf.ErrNotSupported) != tc.unsupported {
			t.Errorf("%s: classified as %v; want refused=%v unsupported=%v", tc.name, got, tc.refused, tc.unsupported)
		}
		if tc.refused && !strings.Contains(got.Error(), "BPF_PROG_TYPE_TRACING program fentry/bpf_get_numa_node_id: EPERM") {
			t.Errorf("%s: %q does not name the program type, the program and the errno", tc.name, got)
		}
		if !tc.refused && !errors.Is(got, tc.err) {
			t.Errorf("%s: ClassifyLoad changed the error to %v", tc.name, got)
		}
	}
	if ClassifyLoad(nil, ps) != nil {
		t.Error("ClassifyLoad(nil) is not nil")
	}
}

// TestHaveKfunc: a function every kernel with BTF has (the helper the
// tracing probe hooks) is found, a made-up name is a missing feature.
func TestHaveKfunc(t *testing.T) {
	if _, err := btf.LoadKernelSpec(); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	if err := HaveKfunc("bpf_get_numa_node_id"); err != nil {
		t.Errorf("HaveKfunc(bpf_get_numa_node_id): %v", err)
	}
	if err := HaveKfunc("bpfbench_no_such_kfunc"); !errors.Is(err, ebpf.ErrNotSupported) {
		t.Errorf("HaveKfunc of a made-up name: %v, want ErrNotSupported", err)
	}
}

// TestHaveAttachType: an attach type every kernel with BTF names (fentry,
// Linux 5.5) is there; a made-up one is a missing feature that says which
// kernel brought it.
func TestHaveAttachType(t *testing.T) {
	if _, err := btf.LoadKernelSpec(); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	if err := HaveAttachType("BPF_TRACE_FENTRY", "Linux 5.5"); err != nil {
		t.Errorf("HaveAttachType(BPF_TRACE_FENTRY): %v", err)
	}
	err := HaveAttachType("BPF_TRACE_BPFBENCH_NONE", "Linux 99")
	if !errors.Is(err, ebpf.ErrNotSupported) || !strings.Contains(err.Error(), "Linux 99") {
		t.Errorf("HaveAttachType of a made-up name: %v, want ErrNotSupported naming Linux 99", err)
	}
}
