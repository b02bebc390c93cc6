package probe

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"bpfbench/bpf/host"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// ErrRefused marks a program load the kernel refused before verifying the
// program: a policy of this machine, not a missing feature.
var ErrRefused = errors.New("the kernel refused the load before verification (host policy), not a missing feature")

// refusedHint says where refused programs run: a kernel booted in QEMU
// around the test binary, whose policy allows them.
const refusedHint = "they run in a guest: make kernels vmdeps, then make vmbench KERNEL=6.12 ICOUNT=0 BENCH='^BenchmarkTrampoline$'"

// ClassifyLoad tells apart the ways loading ps fails: ErrRefused when the
// kernel said EPERM without running the verifier (empty log; as root,
// with memory accounted by cgroup since Linux 5.11, RLIMIT_MEMLOCK is not
// the cause), ebpf.ErrNotSupported when the kernel lacks the program type
// or what it attaches to, and the error itself otherwise.
func ClassifyLoad(err error, ps *ebpf.ProgramSpec) error {
	if err == nil || errors.Is(err, ebpf.ErrNotSupported) {
		return err
	}
	var ve *ebpf.VerifierError
	if errors.Is(err, unix.EPERM) && !(errors.As(err, &ve) && len(ve.Log) > 0) {
		return fmt.Errorf("%s program %s: EPERM with an empty verifier log: %w", progTypeName(ps), ps.SectionName, ErrRefused)
	}
	return err
}

// RequireLoaded skips tb when the kernel refused or cannot load ps, err
// being the error of loading it, and fails it on any other error.
func RequireLoaded(tb testing.TB, err error, ps *ebpf.ProgramSpec) {
	tb.Helper()
	err = ClassifyLoad(err, ps)
	if errors.Is(err, ErrRefused) {
		Skip(tb, err.Error()+"; "+refusedHint)
	}
	Require(tb, err, fmt.Sprintf("load %s (%s)", ps.Name, ps.SectionName))
}

// progTypeName is the kernel's name for ps's program type.
func progTypeName(ps *ebpf.ProgramSpec) string {
	switch ps.Type {
	case ebpf.Tracing:
		return "BPF_PROG_TYPE_TRACING"
	case ebpf.Extension:
		return "BPF_PROG_TYPE_EXT"
	case ebpf.LSM:
		return "BPF_PROG_TYPE_LSM"
	case ebpf.RawTracepoint:
		return "BPF_PROG_TYPE_RAW_TRACEPOINT"
	case ebpf.Kprobe:
		return "BPF_PROG_TYPE_KPROBE"
	case ebpf.TracePoint:
		return "BPF_PROG_TYPE_TRACEPOINT"
	case ebpf.XDP:
		return "BPF_PROG_TYPE_XDP"
	}
	return ps.Type.String()
}

// tracingTarget is the kernel function the tracing probe attaches to: the
// helper the selftests' trigger benchmark hooks, in every kernel.
const tracingTarget = "bpf_get_numa_node_id"

// tracingProbe is the error of loading a trivial fentry program, probed
// once: every trampoline row (fentry, fexit, fmod_ret, freplace) skips on
// it before setting anything up.
var tracingProbe = sync.OnceValue(func() error {
	ps := &ebpf.ProgramSpec{
		Name: "bpfbench_probe", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry,
		AttachTo: tracingTarget, SectionName: "fentry/" + tracingTarget,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	}
	p, err := ebpf.NewProgram(ps)
	if err != nil {
		return ClassifyLoad(err, ps)
	}
	return p.Close()
})

// RequireTracing skips tb when this kernel cannot load tracing programs
// (BPF_PROG_TYPE_TRACING: fentry and fexit since Linux 5.5, fmod_ret 5.7,
// freplace 5.6), naming the refusal where the kernel refused the probe's
// load, and fails it when the probe fails otherwise.
func RequireTracing(tb testing.TB) {
	tb.Helper()
	host.RequireRoot(tb)
	err := tracingProbe()
	if errors.Is(err, ErrRefused) {
		Skipf(tb, "no trampolines (fentry, fexit, fmod_ret, freplace) here: the probe load of a %v; %s", err, refusedHint)
	}
	Require(tb, err, "load an fentry program")
}
