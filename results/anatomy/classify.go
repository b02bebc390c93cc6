package anatomy

import (
	"bytes"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// A Kind is what an anatomy counts.
type Kind int

const (
	// Instrs are all instructions executed.
	Instrs Kind = iota
	// Calls are direct near calls (call rel32), thunks' own included.
	Calls
	// IndirectCalls and IndirectJumps are near calls and jumps through a
	// register or memory: what a retpoline replaces, and what is left of
	// it without one.
	IndirectCalls
	IndirectJumps
	// Rets are near returns (ret, ret imm16), a return thunk's own included.
	Rets
	// Retpolines are entries into a retpoline thunk
	// (__x86_indirect_thunk_*, and its call-depth and jump variants).
	Retpolines
	// ReturnThunks are entries into a return thunk (__x86_return_thunk,
	// retbleed_return_thunk, srso_return_thunk, its_return_thunk,
	// call_depth_return_thunk, ...): one per return the kernel sends
	// through one.
	ReturnThunks
	// ITSThunks are entries into an ITS indirect-branch thunk
	// (__x86_indirect_its_thunk_*).
	ITSThunks
	// Lfences are lfence instructions; Serialising the instructions that
	// serialise the pipeline (cpuid, iret, wrmsr, mov to a control
	// register).
	Lfences
	Serialising
	// KCFIChecks are clang kCFI's caller-side hash checks before an
	// indirect call: add -N(%reg),%r10d with a small negative
	// displacement, the target's hash against the expected one.
	KCFIChecks
	// FineIBT are FineIBT's callee-side checks (sub $hash,%r10d) and
	// Endbr the ENDBR64 landing pads executed.
	FineIBT
	Endbr
	// DepthAccounting are call-depth tracking's updates of the per-CPU
	// depth (sar/shl $5 of a %gs: variable), in call thunks and
	// call_depth_return_thunk.
	DepthAccounting
	// BareRets are the returns executed outside every thunk: those no
	// retpoline or return thunk stands for (a thunk's own ret is not
	// bare).
	BareRets
	// Undecoded are instructions the decoder could not read (counted in
	// Instrs, in no other kind).
	Undecoded
	// ClockReads are reads of the time stamp counter (rdtsc, rdtscp):
	// what sched_clock() and ktime_get_ns() come down to on a TSC clock
	// source, in a pvclock read too.
	ClockReads
	nKinds
)

// kindUnits are the kinds' units, per op of the row.
var kindUnits = [nKinds]string{
	Instrs:          "instrs/op",
	Calls:           "calls/op",
	IndirectCalls:   "icalls/op",
	IndirectJumps:   "ijmps/op",
	Rets:            "rets/op",
	Retpolines:      "retpolines/op",
	ReturnThunks:    "retthunks/op",
	ITSThunks:       "itsthunks/op",
	Lfences:         "lfences/op",
	Serialising:     "serialising/op",
	KCFIChecks:      "kcfi-checks/op",
	FineIBT:         "fineibt-checks/op",
	Endbr:           "endbr/op",
	DepthAccounting: "depth-updates/op",
	BareRets:        "bare-rets/op",
	Undecoded:       "undecoded/op",
	ClockReads:      "clock-reads/op",
}

// Unit is the kind's unit.
func (k Kind) Unit() string { return kindUnits[k] }

// Counts holds a number per kind.
type Counts [nKinds]float64

// profile is what one execution of a block runs: a count per kind, and
// its instructions per symbol.
type profile struct {
	counts Counts
	fns    []fnCount
}

type fnCount struct {
	name string
	n    float64
}

var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// unknownToDecoder are instructions x86asm does not know, none of which
// is of a kind counted: CLAC, STAC, RDPKRU, WRPKRU, SERIALIZE
// (0f 01 ca/cb/ee/ef/e8).
var unknownToDecoder = map[byte]Kind{0xca: Instrs, 0xcb: Instrs, 0xee: Instrs, 0xef: Instrs, 0xe8: Serialising}

// profileOf decodes a block and classifies its instructions; the thunk
// a block starts at counts an entry.
func profileOf(b *Block) profile {
	var p profile
	syms := b.Syms
	if syms == nil {
		syms = newSymbols(nil)
	}
	if len(b.Insns) > 0 {
		for _, s := range syms.allAt(b.Vaddr) {
			if k, ok := thunkKind(s.Name); ok {
				p.counts[k]++
				break
			}
		}
	}
	addr := b.Vaddr
	for _, code := range b.Insns {
		sym, _ := syms.At(addr)
		p.addFn(sym.Name, 1)
		p.counts[Instrs]++
		addr += uint64(len(code))
		switch {
		case bytes.Equal(code, endbr64):
			p.counts[Endbr]++
			continue
		case len(code) == 3 && code[0] == 0x0f && code[1] == 0x01:
			if k, ok := unknownToDecoder[code[2]]; ok {
				if k != Instrs {
					p.counts[k]++
				}
				continue
			}
		}
		inst, ok := decode(code)
		if !ok {
			p.counts[Undecoded]++
			continue
		}
		classify(&p.counts, inst)
		if inst.Op == x86asm.RET && !thunkBody(sym.Name) {
			p.counts[BareRets]++
		}
	}
	return p
}

// decode decodes one instruction. QEMU 7.2 gives an instruction that
// crosses into the next page only its first page's bytes: where the
// plugin could not pad them (a block's last instruction), they decode
// padded with zeros, which complete its operands and leave its opcode.
func decode(code []byte) (x86asm.Inst, bool) {
	inst, err := x86asm.Decode(code, 64)
	if err == nil && inst.Op != 0 && inst.Len == len(code) {
		return inst, true
	}
	padded := append(code[:len(code):len(code)], make([]byte, 15)...)
	inst, err = x86asm.Decode(padded, 64)
	if err == nil && inst.Op != 0 && inst.Len > len(code) {
		return inst, true
	}
	return inst, false
}

func (p *profile) addFn(name string, n float64) {
	if l := len(p.fns); l > 0 && p.fns[l-1].name == name {
		p.fns[l-1].n += n
		return
	}
	p.fns = append(p.fns, fnCount{name, n})
}

// classify adds one instruction to c.
func classify(c *Counts, in x86asm.Inst) {
	switch in.Op {
	case x86asm.CALL:
		if _, rel := in.Args[0].(x86asm.Rel); rel {
			c[Calls]++
		} else {
			c[IndirectCalls]++
		}
	case x86asm.JMP:
		if _, rel := in.Args[0].(x86asm.Rel); !rel {
			c[IndirectJumps]++
		}
	case x86asm.RET:
		c[Rets]++
	case x86asm.LFENCE:
		c[Lfences]++
	case x86asm.RDTSC, x86asm.RDTSCP:
		c[ClockReads]++
	case x86asm.CPUID, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.WRMSR:
		c[Serialising]++
	case x86asm.MOV:
		if r, ok := in.Args[0].(x86asm.Reg); ok && r >= x86asm.CR0 && r <= x86asm.CR15 {
			c[Serialising]++
		}
	case x86asm.ADD:
		// kCFI: mov $-hash,%r10d; add -N(%reg),%r10d; je; ud2.
		if r, ok := in.Args[0].(x86asm.Reg); ok && r == x86asm.R10L {
			if m, ok := in.Args[1].(x86asm.Mem); ok && m.Disp < 0 && m.Disp >= -32 {
				c[KCFIChecks]++
			}
		}
	case x86asm.SUB:
		// FineIBT's callee: endbr64; sub $hash,%r10d; jz/je; ud2.
		if r, ok := in.Args[0].(x86asm.Reg); ok && r == x86asm.R10L {
			if _, ok := in.Args[1].(x86asm.Imm); ok {
				c[FineIBT]++
			}
		}
	case x86asm.SAR, x86asm.SHL:
		if m, ok := in.Args[0].(x86asm.Mem); ok && m.Segment == x86asm.GS {
			if imm, ok := in.Args[1].(x86asm.Imm); ok && imm == 5 {
				c[DepthAccounting]++
			}
		}
	}
}

// thunkBody says a function is a thunk or a part of one, whose ret
// stands for another function's return: the thunks thunkKind names, and
// the pieces they call or jump to (srso_safe_ret, the untraining
// sequences).
func thunkBody(name string) bool {
	_, ok := thunkKind(name)
	return ok || strings.HasPrefix(name, "__x86_indirect_thunk_") || strings.Contains(name, "safe_ret") ||
		strings.Contains(name, "untrain_ret") || strings.HasPrefix(name, "__x86_return")
}

// thunkKind says which thunk a symbol starts, by the kernel's names
// (arch/x86/lib/retpoline.S).
func thunkKind(name string) (Kind, bool) {
	switch {
	case strings.HasPrefix(name, "__x86_indirect_its_thunk_"):
		return ITSThunks, true
	case strings.HasPrefix(name, "__x86_indirect_thunk_"),
		strings.HasPrefix(name, "__x86_indirect_call_thunk_"),
		strings.HasPrefix(name, "__x86_indirect_jump_thunk_"):
		if strings.HasSuffix(name, "_array") {
			return 0, false
		}
		return Retpolines, true
	case strings.HasSuffix(name, "return_thunk"), name == "__x86_return_skl":
		return ReturnThunks, true
	}
	return 0, false
}
