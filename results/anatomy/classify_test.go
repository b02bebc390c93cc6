package anatomy

import (
	"testing"
)

func code(insns ...[]byte) [][]byte { return insns }

func TestProfileClassifies(t *testing.T) {
	insns := code(
		[]byte{0xf3, 0x0f, 0x1e, 0xfa},                                     // endbr64
		[]byte{0xe8, 0x00, 0x00, 0x00, 0x00},                               // call rel32
		[]byte{0xff, 0xd0},                                                 // call *%rax
		[]byte{0x41, 0xba, 0x88, 0xa9, 0xcb, 0xed},                         // mov $-hash,%r10d
		[]byte{0x45, 0x03, 0x53, 0xf1},                                     // add -0xf(%r11),%r10d: kCFI
		[]byte{0x41, 0x81, 0xea, 0x78, 0x56, 0x34, 0x12},                   // sub $0x12345678,%r10d: FineIBT
		[]byte{0x65, 0x48, 0xc1, 0x3c, 0x25, 0x34, 0x12, 0x00, 0x00, 0x05}, // sarq $5,%gs:0x1234: depth
		[]byte{0x0f, 0xae, 0xe8},                                           // lfence
		[]byte{0x0f, 0xa2},                                                 // cpuid
		[]byte{0xff, 0xe0},                                                 // jmp *%rax
		[]byte{0xc3},                                                       // ret
		[]byte{0x0f, 0x01, 0xca},                                           // clac
		[]byte{0x0f, 0x31},                                                 // rdtsc
		[]byte{0x0f, 0x01, 0xf9},                                           // rdtscp
	)
	b := &Block{Vaddr: 0x1000, Insns: insns, Syms: newSymbols([]Symbol{{Addr: 0x1000, Name: "f"}})}
	p := profileOf(b)
	want := map[Kind]float64{
		Instrs: 14, Calls: 1, IndirectCalls: 1, IndirectJumps: 1, Rets: 1, Lfences: 1, Serialising: 1,
		KCFIChecks: 1, FineIBT: 1, Endbr: 1, DepthAccounting: 1, BareRets: 1, ClockReads: 2,
	}
	for k := Kind(0); k < nKinds; k++ {
		if p.counts[k] != want[k] {
			t.Errorf("%s = %v, want %v", k.Unit(), p.counts[k], want[k])
		}
	}
	if len(p.fns) != 1 || p.fns[0] != (fnCount{"f", 14}) {
		t.Errorf("functions = %v, want f with 14", p.fns)
	}
}

func TestProfileCountsThunkEntries(t *testing.T) {
	syms := newSymbols([]Symbol{
		{Addr: 0x100, Name: "__x86_indirect_thunk_array"},
		{Addr: 0x100, Name: "__x86_indirect_thunk_rax"},
		{Addr: 0x200, Name: "srso_return_thunk"},
		{Addr: 0x300, Name: "__x86_indirect_its_thunk_rax"},
		{Addr: 0x400, Name: "memcpy"},
	})
	ret := [][]byte{{0xc3}}
	for _, c := range []struct {
		addr uint64
		kind Kind
	}{{0x100, Retpolines}, {0x200, ReturnThunks}, {0x300, ITSThunks}} {
		p := profileOf(&Block{Vaddr: c.addr, Insns: ret, Syms: syms})
		if p.counts[c.kind] != 1 {
			t.Errorf("block at %#x: %s = %v, want 1", c.addr, c.kind.Unit(), p.counts[c.kind])
		}
	}
	// A block inside a thunk, or at a function that is none, enters none.
	for _, addr := range []uint64{0x101, 0x400} {
		p := profileOf(&Block{Vaddr: addr, Insns: ret, Syms: syms})
		if p.counts[Retpolines]+p.counts[ReturnThunks]+p.counts[ITSThunks] != 0 {
			t.Errorf("block at %#x counts a thunk entry", addr)
		}
	}
}

func TestProfileUndecodable(t *testing.T) {
	// A call QEMU cut short at a page's end still counts as a call; an
	// instruction the decoder cannot read (a 3-byte VEX map) counts as
	// undecoded, and those after it as what they are.
	p := profileOf(&Block{Vaddr: 0, Insns: [][]byte{{0x90}, {0xe8, 0x00}, {0xc4, 0xe3, 0x7b, 0xf0, 0xc0, 0x05}, {0xc3}}})
	if p.counts[Instrs] != 4 || p.counts[Calls] != 1 || p.counts[Rets] != 1 {
		t.Errorf("instrs %v calls %v rets %v, want 4, 1, 1", p.counts[Instrs], p.counts[Calls], p.counts[Rets])
	}
}

func TestThunkNames(t *testing.T) {
	for name, want := range map[string]Kind{
		"__x86_indirect_thunk_r11":      Retpolines,
		"__x86_indirect_call_thunk_rax": Retpolines,
		"__x86_indirect_jump_thunk_rax": Retpolines,
		"__x86_indirect_its_thunk_rdx":  ITSThunks,
		"__x86_return_thunk":            ReturnThunks,
		"retbleed_return_thunk":         ReturnThunks,
		"its_return_thunk":              ReturnThunks,
		"call_depth_return_thunk":       ReturnThunks,
	} {
		if k, ok := thunkKind(name); !ok || k != want {
			t.Errorf("%s: %v %v, want %v", name, k, ok, want)
		}
	}
	for _, name := range []string{"__x86_indirect_thunk_array", "srso_safe_ret", "bpf_test_run"} {
		if _, ok := thunkKind(name); ok {
			t.Errorf("%s counted as a thunk", name)
		}
	}
}

func TestBareRets(t *testing.T) {
	syms := newSymbols([]Symbol{
		{Addr: 0x100, Name: "srso_return_thunk"},
		{Addr: 0x110, Name: "srso_safe_ret"},
		{Addr: 0x200, Name: "__x86_indirect_thunk_rax"},
		{Addr: 0x300, Name: "bpf_test_run"},
	})
	ret := [][]byte{{0xc3}}
	for addr, bare := range map[uint64]float64{0x100: 0, 0x110: 0, 0x200: 0, 0x300: 1} {
		if p := profileOf(&Block{Vaddr: addr, Insns: ret, Syms: syms}); p.counts[BareRets] != bare {
			t.Errorf("a ret at %#x: bare-rets %v, want %v", addr, p.counts[BareRets], bare)
		}
	}
}
