package bpf

import "github.com/cilium/ebpf"

// An XDPProgram is one of progs/xdp.c's programs: the name the benchmarks
// give it, and its field in any loaded copy of XDPObjects (the mitigations
// family loads a copy per JIT hardening level). Variants refer to a
// program by its *XDPProgram, never by a string to look up.
type XDPProgram struct {
	Name string
	of   func(*XDPObjects) *ebpf.Program
}

// Of is the program in objs.
func (p *XDPProgram) Of(objs *XDPObjects) *ebpf.Program { return p.of(objs) }

func (p *XDPProgram) String() string { return p.Name }

// XDPProgs are progs/xdp.c's programs.
var XDPProgs = struct {
	// Drop returns XDP_DROP: the kernel selftest xdp_perf's program.
	Drop *XDPProgram
	// Pass and Tx return XDP_PASS and XDP_TX.
	Pass, Tx *XDPProgram
	// Parse reads the Ethernet, IP and UDP headers, Touch also swaps the
	// MAC addresses, before XDP_DROP.
	Parse, Touch *XDPProgram
	// Add64 is Drop plus 64 register additions, the calibration of
	// instruction counts.
	Add64 *XDPProgram
}{
	Drop:  &XDPProgram{XDPProgDrop, func(o *XDPObjects) *ebpf.Program { return o.Drop }},
	Pass:  &XDPProgram{XDPProgPass, func(o *XDPObjects) *ebpf.Program { return o.Pass }},
	Tx:    &XDPProgram{XDPProgTx, func(o *XDPObjects) *ebpf.Program { return o.Tx }},
	Parse: &XDPProgram{XDPProgParse, func(o *XDPObjects) *ebpf.Program { return o.Parse }},
	Touch: &XDPProgram{XDPProgTouch, func(o *XDPObjects) *ebpf.Program { return o.Touch }},
	Add64: &XDPProgram{XDPProgAdd64, func(o *XDPObjects) *ebpf.Program { return o.Add64 }},
}
