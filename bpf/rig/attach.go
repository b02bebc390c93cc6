package rig

import (
	"errors"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// attachBusyWait is how long attachXDP waits for a device to come free.
const attachBusyWait = time.Second

// attachXDP attaches an XDP link, waiting up to attachBusyWait while the
// device says EBUSY: 5.10 frees a closed XDP link's hold on its device a
// moment after close returns, so a device whose link was just closed is
// busy until then. A device that another link holds stays busy, and the
// error is EBUSY.
func attachXDP(opts link.XDPOptions) (link.Link, error) {
	deadline := time.Now().Add(attachBusyWait)
	for {
		l, err := link.AttachXDP(opts)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
