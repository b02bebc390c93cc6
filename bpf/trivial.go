package bpf

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// XDP actions (enum xdp_action, include/uapi/linux/bpf.h): what the
// suite's trivial programs return, and the rig receivers' load-time
// rx_action.
const (
	XDPDrop     = 1
	XDPPass     = 2
	XDPTx       = 3
	XDPRedirect = 4
)

// ReturnProgram loads an XDP program that only returns action: a distinct
// program each call, as the dispatcher counts programs, not code.
func ReturnProgram(name string, action int32) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       name,
		Type:       ebpf.XDP,
		AttachType: ebpf.AttachXDP,
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, action),
			asm.Return(),
		},
		License: "GPL",
	})
}
