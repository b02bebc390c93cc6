package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The tracing attach types of Linux 7.0 and later (enum bpf_attach_type),
// which cilium/ebpf v0.22 reads from a section name (fsession/) or not at
// all (fentry.multi/, fexit.multi/), but cannot load or attach: its
// loader finds no attach target for them, and link.AttachTracing refuses
// them. LoadTracing and AttachTracingMulti do those two steps.
const (
	AttachFSession    = ebpf.AttachType(58) // BPF_TRACE_FSESSION: Linux 7.0
	AttachFEntryMulti = ebpf.AttachType(59) // BPF_TRACE_FENTRY_MULTI
	AttachFExitMulti  = ebpf.AttachType(60) // BPF_TRACE_FEXIT_MULTI
)

// TracingLoad says what LoadTracing loads: a program of a spec as a
// tracing program of an attach type cilium/ebpf cannot load.
type TracingLoad struct {
	Spec   *ebpf.ProgramSpec
	Attach ebpf.AttachType
	// Maps replace the spec's map references by name (".bss").
	Maps map[string]*ebpf.Map
	// Target is the BPF program whose function Spec.AttachTo the program
	// hooks; nil for a kernel function of that name. A multi-link
	// program loads without a target: its link names the functions.
	Target *ebpf.Program
}

// LoadTracing loads l.Spec with the BPF_PROG_LOAD of its own (cilium/ebpf
// v0.22 loads tracing programs of the attach types it knows only): it
// resolves the spec's map references, its kfunc calls in vmlinux's BTF,
// and the BTF id of the function it attaches to, as cilium/ebpf does
// for fentry. The kernel's verifier log comes back in the error.
func LoadTracing(l TracingLoad) (*ebpf.Program, error) {
	insns := l.Spec.Copy().Instructions
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	for i := range insns {
		ins := &insns[i]
		ref := ins.Reference()
		switch {
		case ins.IsLoadFromMap():
			m := l.Maps[ref]
			if m == nil {
				return nil, fmt.Errorf("%s: no map %q given", l.Spec.Name, ref)
			}
			if err := ins.AssociateMap(m); err != nil {
				return nil, err
			}
		case ins.IsKfuncCall():
			var fn *btf.Func
			if err := kernel.TypeByName(ref, &fn); err != nil {
				return nil, fmt.Errorf("%s: kfunc %s: %w", l.Spec.Name, ref, err)
			}
			id, err := kernel.TypeID(fn)
			if err != nil {
				return nil, err
			}
			ins.Constant, ins.Offset = int64(id), 0 // 0: vmlinux
		}
	}
	var code bytes.Buffer
	// Little-endian: bpf2go builds the suite's objects for bpfel.
	if err := insns.Marshal(&code, binary.LittleEndian); err != nil {
		return nil, fmt.Errorf("%s: %w", l.Spec.Name, err)
	}
	attr := progLoadAttr{
		ProgType:           uint32(ebpf.Tracing),
		InsnCnt:            uint32(code.Len() / 8),
		ExpectedAttachType: uint32(l.Attach),
	}
	copy(attr.ProgName[:unix.BPF_OBJ_NAME_LEN-1], l.Spec.Name)
	switch {
	case l.Attach == AttachFEntryMulti || l.Attach == AttachFExitMulti:
	case l.Target != nil:
		id, err := programFunc(l.Target, l.Spec.AttachTo)
		if err != nil {
			return nil, err
		}
		attr.AttachBtfID, attr.AttachFd = uint32(id), uint32(l.Target.FD())
	default:
		id, err := kernelFunc(kernel, l.Spec.AttachTo)
		if err != nil {
			return nil, err
		}
		attr.AttachBtfID = uint32(id)
	}
	license := append([]byte(l.Spec.License), 0)
	log := make([]byte, 64<<10)
	attr.Insns = uint64(uintptr(unsafe.Pointer(&code.Bytes()[0])))
	attr.License = uint64(uintptr(unsafe.Pointer(&license[0])))
	attr.LogLevel, attr.LogSize, attr.LogBuf = 1, uint32(len(log)), uint64(uintptr(unsafe.Pointer(&log[0])))
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(code.Bytes())
	runtime.KeepAlive(license)
	runtime.KeepAlive(log)
	runtime.KeepAlive(l.Target)
	if errno != 0 {
		return nil, &LoadError{Errno: errno, Log: string(bytes.TrimRight(log, "\x00"))}
	}
	return ebpf.NewProgramFromFD(int(fd))
}

// AttachTracingMulti attaches p, loaded by LoadTracing as a multi-link
// program (AttachFEntryMulti, AttachFExitMulti), to the kernel functions
// fns with one link: a LINK_CREATE of its own, since cilium/ebpf's
// RawLinkOptions carry no list of functions.
func AttachTracingMulti(p *ebpf.Program, attach ebpf.AttachType, fns ...string) (link.Link, error) {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("kernel BTF: %w", err)
	}
	ids := make([]uint32, len(fns))
	for i, fn := range fns {
		id, err := kernelFunc(kernel, fn)
		if err != nil {
			return nil, err
		}
		ids[i] = uint32(id)
	}
	attr := linkCreateTracingMultiAttr{
		ProgFd:     uint32(p.FD()),
		AttachType: uint32(attach),
		IDs:        uint64(uintptr(unsafe.Pointer(&ids[0]))),
		Cnt:        uint32(len(ids)),
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(ids)
	runtime.KeepAlive(p)
	if errno != 0 {
		return nil, fmt.Errorf("link %v to %v: %w", attach, fns, errno)
	}
	return link.NewFromFD(int(fd))
}

func kernelFunc(kernel *btf.Spec, name string) (btf.TypeID, error) {
	var fn *btf.Func
	if err := kernel.TypeByName(name, &fn); err != nil {
		return 0, fmt.Errorf("kernel function %s: %w", name, err)
	}
	return kernel.TypeID(fn)
}

// programFunc is the BTF id of function name in the BTF of the loaded
// program p.
func programFunc(p *ebpf.Program, name string) (btf.TypeID, error) {
	h, err := p.Handle()
	if err != nil {
		return 0, fmt.Errorf("BTF of the target program: %w", err)
	}
	defer h.Close()
	spec, err := h.Spec(nil)
	if err != nil {
		return 0, err
	}
	var fn *btf.Func
	if err := spec.TypeByName(name, &fn); err != nil {
		return 0, fmt.Errorf("function %s of the target program: %w", name, err)
	}
	return spec.TypeID(fn)
}

// A LoadError is a BPF_PROG_LOAD of LoadTracing the kernel refused: its
// errno and the verifier's log (empty where the verifier never ran).
type LoadError struct {
	Errno unix.Errno
	Log   string
}

func (e *LoadError) Error() string {
	if e.Log == "" {
		return e.Errno.Error()
	}
	log := e.Log
	if len(log) > 1024 {
		log = "..." + log[len(log)-1024:]
	}
	return fmt.Sprintf("%v: verifier log:\n%s", e.Errno, log)
}

func (e *LoadError) Unwrap() error { return e.Errno }

// progLoadAttr is union bpf_attr for BPF_PROG_LOAD, up to fd_array
// (include/uapi/linux/bpf.h).
type progLoadAttr struct {
	ProgType           uint32
	InsnCnt            uint32
	Insns              uint64
	License            uint64
	LogLevel           uint32
	LogSize            uint32
	LogBuf             uint64
	KernVersion        uint32
	ProgFlags          uint32
	ProgName           [unix.BPF_OBJ_NAME_LEN]byte
	ProgIfindex        uint32
	ExpectedAttachType uint32
	ProgBtfFd          uint32
	FuncInfoRecSize    uint32
	FuncInfo           uint64
	FuncInfoCnt        uint32
	LineInfoRecSize    uint32
	LineInfo           uint64
	LineInfoCnt        uint32
	AttachBtfID        uint32
	AttachFd           uint32 // attach_prog_fd, attach_btf_obj_fd
	CoreReloCnt        uint32
	FdArray            uint64
}

// linkCreateTracingMultiAttr is union bpf_attr for BPF_LINK_CREATE with
// its tracing_multi member (Linux 7.3).
type linkCreateTracingMultiAttr struct {
	ProgFd     uint32
	TargetFd   uint32
	AttachType uint32
	Flags      uint32
	IDs        uint64
	Cookies    uint64
	Cnt        uint32
	_          [4]byte
}
