package bpf

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
	"golang.org/x/arch/x86/x86asm"
)

// ErrNoJitedImage reports that the kernel did not show a program's JIT'ed
// image: the JIT is off, or the caller may not read kernel text
// (bpf_dump_raw_ok: kptr_restrict, CAP_SYSLOG).
var ErrNoJitedImage = errors.New("no JIT'ed image")

// JitAddr is the address of p's JIT'ed image (its first function's).
func JitAddr(p *ebpf.Program) (uintptr, error) {
	info, err := p.Info()
	if err != nil {
		return 0, fmt.Errorf("program info: %w", err)
	}
	addrs, ok := info.JitedKsymAddrs()
	if !ok || len(addrs) == 0 || addrs[0] == 0 {
		return 0, fmt.Errorf("address of %s's JIT image: %w", info.Name, ErrNoJitedImage)
	}
	return addrs[0], nil
}

// JitedInstructions counts the machine instructions of p's JIT'ed image,
// decoded one by one (x86-64 only). An instruction the decoder does not
// know is an error: a count that skipped it would be wrong.
func JitedInstructions(p *ebpf.Program) (int, error) {
	if runtime.GOARCH != "amd64" {
		return 0, fmt.Errorf("decode a %s JIT image: %w", runtime.GOARCH, ebpf.ErrNotSupported)
	}
	info, err := p.Info()
	if err != nil {
		return 0, fmt.Errorf("program info: %w", err)
	}
	img, ok := info.JitedInsns()
	if !ok || len(img) == 0 {
		return 0, ErrNoJitedImage
	}
	n := 0
	for off := 0; off < len(img); n++ {
		if endbr(img[off:]) {
			// An IBT/kCFI landing pad, which x86asm does not know.
			off += 4
			continue
		}
		inst, err := x86asm.Decode(img[off:], 64)
		if err != nil {
			return 0, fmt.Errorf("JIT image of %s at offset %#x (% x): %w", info.Name, off, img[off:min(off+8, len(img))], err)
		}
		off += inst.Len
	}
	return n, nil
}

// endbr reports whether b starts with ENDBR64 or ENDBR32 (F3 0F 1E FA/FB),
// the landing pad an IBT-enabled JIT puts at a program's entry.
func endbr(b []byte) bool {
	return len(b) >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && (b[3] == 0xfa || b[3] == 0xfb)
}
