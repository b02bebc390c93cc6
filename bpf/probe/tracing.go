package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"bpfbench/bpf"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// ErrRefused marks what the kernel refused root without looking at it (a
// program load before verification, a live-frames run): a policy of this
// machine, not a missing feature. An error wrapping it also says where the
// refused thing runs: a kernel booted in QEMU around the test binary,
// whose policy allows it.
var ErrRefused = errors.New("refused by this host's policy, not a missing feature")

// refusedHint says where refused programs run.
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
	var le *bpf.LoadError
	verified := errors.As(err, &ve) && len(ve.Log) > 0 || errors.As(err, &le) && le.Log != ""
	if errors.Is(err, unix.EPERM) && !verified {
		return fmt.Errorf("%s program %s: EPERM with an empty verifier log: %w; %s", progTypeName(ps), ps.SectionName, ErrRefused, refusedHint)
	}
	return err
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

// Tracing is nil when this kernel loads tracing programs
// (BPF_PROG_TYPE_TRACING: fentry and fexit since Linux 5.5, fmod_ret 5.7,
// freplace 5.6), and otherwise the error of the probe's load, wrapping
// ErrRefused or ebpf.ErrNotSupported where that is why.
func Tracing() error {
	if err := tracingProbe(); err != nil {
		return fmt.Errorf("no trampolines (fentry, fexit, fmod_ret, freplace): the probe load of a %w", err)
	}
	return nil
}

// kprobePMU exists when the kernel has kprobe events (CONFIG_KPROBE_EVENTS),
// which BPF kprobes attach through.
const kprobePMU = "/sys/bus/event_source/devices/kprobe"

// Kprobes is nil when the kernel has kprobe events, and otherwise an
// error wrapping ebpf.ErrNotSupported.
func Kprobes() error {
	if _, err := os.Stat(kprobePMU); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kprobes not built into this kernel (no %s): %w", kprobePMU, ebpf.ErrNotSupported)
	}
	return nil
}

// HaveKfunc reports whether the kernel's BTF (vmlinux's, not a module's)
// has the function name, which a program needs to call it as a kfunc: an
// error wrapping ebpf.ErrNotSupported when it does not.
func HaveKfunc(name string) error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("kfunc %s: load kernel BTF: %w", name, err)
	}
	var fn *btf.Func
	err = spec.TypeByName(name, &fn)
	if errors.Is(err, btf.ErrNotFound) {
		return fmt.Errorf("kfunc %s not in the kernel's BTF: %w", name, ebpf.ErrNotSupported)
	}
	if err != nil {
		return fmt.Errorf("kfunc %s: %w", name, err)
	}
	return nil
}

// defaultTrampolineCap is BPF_MAX_TRAMP_LINKS on x86-64
// (include/linux/bpf.h), for kernels whose BTF does not carry it (it became
// an enum in Linux 6.4).
const defaultTrampolineCap = 38

// TrampolineCap is how many programs the kernel links to one trampoline
// (BPF_MAX_TRAMP_LINKS: fentry, fexit and fmod_ret together), read from
// the kernel's BTF where it is an enum, else the x86-64 value.
var TrampolineCap = sync.OnceValue(func() int {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return defaultTrampolineCap
	}
	for typ, err := range spec.All() {
		if err != nil {
			break
		}
		e, ok := typ.(*btf.Enum)
		if !ok {
			continue
		}
		for _, v := range e.Values {
			if v.Name == "BPF_MAX_TRAMP_LINKS" {
				return int(v.Value)
			}
		}
	}
	// Not in BTF: a #define, BPF_MAX_TRAMP_LINKS (38) from 5.19 on, and
	// BPF_MAX_TRAMP_PROGS (40) before (5.10 links a 39th program).
	var u unix.Utsname
	var major, minor int
	if unix.Uname(&u) == nil {
		fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
		if major > 0 && (major < 5 || major == 5 && minor < 19) {
			return 40
		}
	}
	return defaultTrampolineCap
})

// HaveAttachType is nil where the running kernel's BTF names the attach
// type (an enumerator of enum bpf_attach_type, such as
// "BPF_TRACE_FSESSION"), and otherwise an error wrapping
// ebpf.ErrNotSupported that says which kernel brought it (since).
func HaveAttachType(name, since string) error {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%s (%s): kernel BTF: %w", name, since, err)
	}
	// The enum, not a load's error: a load fails for many reasons, and
	// only this one says the kernel lacks the type.
	var e *btf.Enum
	if err := kernel.TypeByName("bpf_attach_type", &e); err != nil {
		return fmt.Errorf("%s (%s): %w", name, since, err)
	}
	for _, v := range e.Values {
		if v.Name == name {
			return nil
		}
	}
	return fmt.Errorf("%s (%s): not in this kernel's enum bpf_attach_type: %w", name, since, ebpf.ErrNotSupported)
}
