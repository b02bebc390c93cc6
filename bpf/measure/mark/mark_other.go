//go:build !amd64

package mark

// Open and Close mark nothing where the plugin does not run: it decodes
// x86-64 only.
func Open()  {}
func Close() {}

// Leave names nothing where the plugin does not run.
func Leave(addrs []uint64) {}
