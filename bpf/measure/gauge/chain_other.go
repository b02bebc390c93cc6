//go:build !amd64

package gauge

const haveChain = false

func mulChain(n uint64) uint64 { return pow3(8 * n) }

func mulSpread(n uint64) uint64 { return 4*pow3(n) + 14*n }
