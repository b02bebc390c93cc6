package mark

// Open opens a window: what the CPU executes from here to Close is
// counted by the anatomy plugin, when one is loaded. Elsewhere it is a
// call of a NOP.
func Open()

// Close closes the window Open opened.
func Close()

// tell names v to the plugin (see mark_amd64.s).
//
//go:noescape
func tell(base *byte, v uint64)

// Leave names functions whose code the plugin leaves out of every
// window when the window's task runs it (docs/icount.md#anatomy).
func Leave(addrs []uint64) {
	// The buffer tell loads from: 64 KiB, one byte per value of a 16-bit
	// part. Its pages are faulted in first: a load that faults runs twice.
	told := make([]byte, 1<<16)
	for i := 0; i < len(told); i += 4096 {
		told[i] = 1
	}
	for _, a := range addrs {
		tell(&told[0], a)
	}
}
