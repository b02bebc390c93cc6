package probe

import (
	"errors"
	"fmt"
	"sync"

	"bpfbench/bpf"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// HaveLiveFrames reports whether BPF_PROG_TEST_RUN takes
// BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18), the in-kernel traffic generator
// of the attach-run families: an error wrapping ebpf.ErrNotSupported when
// it does not, and one wrapping ErrRefused where the kernel has it but
// says EPERM to root: a policy of the host, as for tracing programs. The
// probe runs a program that drops its one frame.
var HaveLiveFrames = sync.OnceValue(func() error {
	p, err := bpf.ReturnProgram("bpfbench_probe", bpf.XDPDrop)
	if err != nil {
		return fmt.Errorf("load live-frames probe: %w", err)
	}
	defer p.Close()
	frame, err := bpf.UDPFrame(64)
	if err != nil {
		return err
	}
	// As the generator calls it, batch size included: a kernel older
	// than 5.18 may run the program without looking at the flag, but
	// refuses the attribute's newer fields (EINVAL or E2BIG).
	_, err = p.Run(&ebpf.RunOptions{Data: frame, Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES, BatchSize: bpf.LiveFramesBatch})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18): %w", ebpf.ErrNotSupported)
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES: EPERM as root: %w; it runs in a guest: make kernels vmdeps, then make vmtest KERNEL=7.3", ErrRefused)
	}
	if err != nil {
		return fmt.Errorf("live-frames probe: %w", err)
	}
	return nil
})
