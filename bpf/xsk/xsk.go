package xsk

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AF_XDP sockets (Linux 4.18), as the AF_XDP family needs them: one socket
// with its own UMEM, bound to one RX queue of a device, and an application
// that drops what it receives (rxdrop) or sends it back out (l2fwd), as the
// kernel's xdpsock sample does.
//
// A socket shares four single-producer, single-consumer rings with the
// kernel (Documentation/networking/af_xdp.rst): user space produces UMEM
// frame addresses on the fill ring and descriptors on the TX ring; the
// kernel produces descriptors on the RX ring and sent addresses on the
// completion ring. Each side owns one index of a ring and reads the other's:
// reading the other's index with an atomic load before touching the entries
// (acquire), and publishing its own with an atomic store after them
// (release), is the barrier pairing of libxdp's xsk.h. Go's sync/atomic is
// sequentially consistent, more than that needs.

// Socket sizes: 4096 frames of 2048 bytes (xdpsock's defaults, at half the
// frame size, which 64-byte frames do not miss), a fill ring that holds
// every frame, 2048-entry RX, TX and completion rings.
const (
	xskFrameSize = 2048
	xskFrames    = 4096
	xskFillSize  = xskFrames
	xskRingSize  = 2048
)

// Config says which queue a socket binds to and how.
type Config struct {
	Ifindex, Queue int
	// Zerocopy asks for zero-copy (XDP_ZEROCOPY): the driver DMAs into the
	// UMEM. Otherwise the socket is in copy mode (XDP_COPY): the kernel
	// copies each frame into the UMEM. A driver without zero-copy support
	// (veth) refuses XDP_ZEROCOPY with EOPNOTSUPP.
	Zerocopy bool
}

// Socket is an AF_XDP socket bound to a queue, with its UMEM and rings.
type Socket struct {
	fd   int
	umem []byte
	maps [][]byte
	// fill and tx are produced here; rx and comp consumed here.
	fill, comp, rx, tx ring

	// Counters of the application, for other goroutines to read.
	Received  atomic.Uint64 // descriptors taken off the RX ring
	Forwarded atomic.Uint64 // descriptors put on the TX ring (l2fwd)
	Completed atomic.Uint64 // sent frames returned on the completion ring
	// TID is the thread Serve runs on, once it has started.
	TID atomic.Int32

	busyNs    atomic.Int64 // finished busy periods
	busySince atomic.Int64 // start of the current one (xskClock), 0 when idle
}

// ring is one ring: the two indexes, the entries, and this side's copy
// of the index it owns.
type ring struct {
	producer, consumer *uint32
	entries            unsafe.Pointer
	mask               uint32
	own                uint32 // the index this side owns (producer or consumer)
}

// Open creates a socket, registers a UMEM and binds to cfg's queue, with
// every UMEM frame on the fill ring. It must run on a thread in the
// device's network namespace: bind resolves the ifindex there. A queue
// whose previous socket is still being released (the kernel frees it from
// a work item) is retried for up to 2 s.
func Open(cfg Config) (*Socket, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP socket: %w", err)
	}
	x := &Socket{fd: fd}
	if err := x.setup(cfg); err != nil {
		return nil, errors.Join(err, x.Close())
	}
	return x, nil
}

func (x *Socket) setup(cfg Config) error {
	umem, err := unix.Mmap(-1, 0, xskFrames*xskFrameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("map UMEM: %w", err)
	}
	x.umem = umem
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&umem[0]))), Len: uint64(len(umem)), Size: xskFrameSize}
	if err := sockopt(unix.SYS_SETSOCKOPT, x.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("register UMEM: %w", err)
	}
	for _, r := range []struct {
		opt, size int
		name      string
	}{
		{unix.XDP_UMEM_FILL_RING, xskFillSize, "fill"},
		{unix.XDP_UMEM_COMPLETION_RING, xskRingSize, "completion"},
		{unix.XDP_RX_RING, xskRingSize, "RX"},
		{unix.XDP_TX_RING, xskRingSize, "TX"},
	} {
		if err := unix.SetsockoptInt(x.fd, unix.SOL_XDP, r.opt, r.size); err != nil {
			return fmt.Errorf("size the %s ring: %w", r.name, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := sockopt(unix.SYS_GETSOCKOPT, x.fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fmt.Errorf("read ring offsets: %w", err)
	}
	for _, r := range []struct {
		ring        *ring
		off         unix.XDPRingOffset
		pgoff       int64
		size, entry uint64
	}{
		{&x.fill, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, xskFillSize, 8},
		{&x.comp, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, xskRingSize, 8},
		{&x.rx, off.Rx, unix.XDP_PGOFF_RX_RING, xskRingSize, uint64(unsafe.Sizeof(unix.XDPDesc{}))},
		{&x.tx, off.Tx, unix.XDP_PGOFF_TX_RING, xskRingSize, uint64(unsafe.Sizeof(unix.XDPDesc{}))},
	} {
		m, err := unix.Mmap(x.fd, r.pgoff, int(r.off.Desc+r.size*r.entry), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("map ring at page offset %#x: %w", r.pgoff, err)
		}
		x.maps = append(x.maps, m)
		*r.ring = ring{
			producer: (*uint32)(unsafe.Pointer(&m[r.off.Producer])),
			consumer: (*uint32)(unsafe.Pointer(&m[r.off.Consumer])),
			entries:  unsafe.Pointer(&m[r.off.Desc]),
			mask:     uint32(r.size - 1),
		}
	}
	// Every frame on the fill ring, before the socket can receive.
	for i := uint32(0); i < xskFrames; i++ {
		*x.fill.addr(i) = uint64(i) * xskFrameSize
	}
	x.fill.own = xskFrames
	atomic.StoreUint32(x.fill.producer, x.fill.own)

	flags := uint16(unix.XDP_COPY)
	if cfg.Zerocopy {
		flags = unix.XDP_ZEROCOPY
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(cfg.Ifindex), QueueID: uint32(cfg.Queue)}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err = unix.Bind(x.fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return &BindError{Config: cfg, Err: err}
	}
	return nil
}

// BindError is a failed bind: the errno says why (EOPNOTSUPP for
// XDP_ZEROCOPY on a driver without zero-copy, EBUSY for a queue that has a
// socket already).
type BindError struct {
	Config Config
	Err    error
}

func (e *BindError) Error() string {
	mode := "XDP_COPY"
	if e.Config.Zerocopy {
		mode = "XDP_ZEROCOPY"
	}
	return fmt.Sprintf("bind AF_XDP socket with %s to ifindex %d queue %d: %v", mode, e.Config.Ifindex, e.Config.Queue, e.Err)
}

func (e *BindError) Unwrap() error { return e.Err }

func sockopt(call uintptr, fd, opt int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	arg := uintptr(l)
	if call == unix.SYS_GETSOCKOPT {
		arg = uintptr(unsafe.Pointer(&l))
	}
	if _, _, errno := unix.Syscall6(call, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), arg, 0); errno != 0 {
		return errno
	}
	return nil
}

// Busy is the time the application has spent with work to do: from a poll
// that found something to do to the next poll that found nothing, summed.
// The application spins, so its CPU time says nothing of its work; this is
// wall time, read at each change between busy and idle, so time the thread
// lost to other tasks in the middle of a busy period counts as busy.
func (x *Socket) Busy() time.Duration {
	b := x.busyNs.Load()
	if s := x.busySince.Load(); s != 0 {
		b += max(0, xskClock()-s)
	}
	return time.Duration(b)
}

var xskEpoch = time.Now()

// xskClock is monotonic ns since xskEpoch, never 0 (0 means idle).
func xskClock() int64 { return int64(time.Since(xskEpoch)) + 1 }

// FD is the socket, for an XSKMAP.
func (x *Socket) FD() int { return x.fd }

// Stats returns the kernel's counters of the socket (XDP_STATISTICS):
// frames dropped on the way in, for want of RX ring space or of fill ring
// frames, and invalid descriptors.
func (x *Socket) Stats() (unix.XDPStatistics, error) {
	var s unix.XDPStatistics
	if err := sockopt(unix.SYS_GETSOCKOPT, x.fd, unix.XDP_STATISTICS, unsafe.Pointer(&s), unsafe.Sizeof(s)); err != nil {
		return s, fmt.Errorf("read AF_XDP statistics: %w", err)
	}
	return s, nil
}

// Close unmaps the rings and UMEM and closes the socket (which unbinds it
// and takes it out of any XSKMAP). Serve must have returned.
func (x *Socket) Close() error {
	var errs []error
	for _, m := range x.maps {
		errs = append(errs, unix.Munmap(m))
	}
	x.maps = nil
	if x.fd >= 0 {
		errs = append(errs, unix.Close(x.fd))
		x.fd = -1
	}
	if x.umem != nil {
		errs = append(errs, unix.Munmap(x.umem))
		x.umem = nil
	}
	return errors.Join(errs...)
}

func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.entries, uintptr(i&r.mask)*8))
}

func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.entries, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

// ready is what the kernel produced and this side has not consumed.
func (r *ring) ready() uint32 { return atomic.LoadUint32(r.producer) - r.own }

// free is what this side may produce before catching up with the kernel.
func (r *ring) free() uint32 { return r.mask + 1 - (r.own - atomic.LoadUint32(r.consumer)) }

// publish stores this side's index after n more entries.
func (r *ring) publish(n uint32, index *uint32) {
	r.own += n
	atomic.StoreUint32(index, r.own)
}

// An App is what Serve does with the frames a socket receives, after
// xdpsock's applications of the same names.
type App int

const (
	// RxDrop returns every received frame to the fill ring.
	RxDrop App = iota
	// L2Fwd swaps a frame's MAC addresses and sends it back out of the
	// queue (TX ring, then sendto to make the kernel send: copy mode
	// transmits from the sendto call, at most 32 frames per call),
	// returning frames to the fill ring as their sends complete.
	L2Fwd
)

func (a App) String() string {
	switch a {
	case RxDrop:
		return "rxdrop"
	case L2Fwd:
		return "l2fwd"
	}
	return fmt.Sprintf("App(%d)", int(a))
}

// Echoes says the application sends its frames back out.
func (a App) Echoes() bool { return a == L2Fwd }

// Serve runs app until stop is set. It spins without sleeping, as xdpsock
// does without -p, so run it on a CPU of its own, on a locked thread; Busy
// says how much of the time it had work.
func (x *Socket) Serve(app App, stop *atomic.Bool) error {
	if app != RxDrop && app != L2Fwd {
		return fmt.Errorf("AF_XDP application %v: want RxDrop or L2Fwd", app)
	}
	fwd := app.Echoes()
	x.TID.Store(int32(unix.Gettid()))
	busy := false
	defer func() {
		if busy {
			x.busyNs.Add(xskClock() - x.busySince.Load())
			x.busySince.Store(0)
		}
	}()
	for !stop.Load() {
		// Anything to do? Timed from before the work, so that a busy
		// period of one poll counts.
		txPending := fwd && atomic.LoadUint32(x.tx.consumer) != x.tx.own
		if x.comp.ready() == 0 && x.rx.ready() == 0 && !txPending {
			if busy {
				x.busyNs.Add(xskClock() - x.busySince.Load())
				x.busySince.Store(0)
				busy = false
			}
			continue
		}
		if !busy {
			x.busySince.Store(xskClock())
			busy = true
		}
		// Frames whose send completed go back to the fill ring.
		if n := min(x.comp.ready(), x.fill.free()); n > 0 {
			for i := uint32(0); i < n; i++ {
				*x.fill.addr(x.fill.own + i) = *x.comp.addr(x.comp.own + i)
			}
			x.comp.publish(n, x.comp.consumer)
			x.fill.publish(n, x.fill.producer)
			x.Completed.Add(uint64(n))
		}
		if n := x.rx.ready(); n > 0 {
			if fwd {
				n = min(n, x.tx.free())
				for i := uint32(0); i < n; i++ {
					d := x.rx.desc(x.rx.own + i)
					swapMAC(x.umem[d.Addr : d.Addr+12])
					*x.tx.desc(x.tx.own + i) = unix.XDPDesc{Addr: d.Addr, Len: d.Len}
				}
				x.rx.publish(n, x.rx.consumer)
				x.tx.publish(n, x.tx.producer)
				x.Forwarded.Add(uint64(n))
			} else {
				n = min(n, x.fill.free())
				for i := uint32(0); i < n; i++ {
					*x.fill.addr(x.fill.own + i) = x.rx.desc(x.rx.own + i).Addr
				}
				x.rx.publish(n, x.rx.consumer)
				x.fill.publish(n, x.fill.producer)
			}
			x.Received.Add(uint64(n))
		}
		if fwd && atomic.LoadUint32(x.tx.consumer) != x.tx.own {
			if err := x.kick(); err != nil {
				return err
			}
		}
	}
	return nil
}

// kick makes the kernel send what is on the TX ring: sendto with no data,
// as xdpsock's kick_tx. EAGAIN (the per-call budget was used up), ENOBUFS,
// EBUSY and ENETDOWN say "try again", as there.
func (x *Socket) kick() error {
	// Raw: it does not block (MSG_DONTWAIT), and the runtime's syscall
	// bookkeeping would add to every kick.
	_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.ENOBUFS, unix.EBUSY, unix.ENETDOWN:
		return nil
	}
	return fmt.Errorf("kick AF_XDP TX with sendto: %w", errno)
}

func swapMAC(h []byte) {
	var tmp [6]byte
	copy(tmp[:], h[0:6])
	copy(h[0:6], h[6:12])
	copy(h[6:12], tmp[:])
}
