package measure

const haveChain = true

// mulChain runs n iterations of eight dependent multiplications by 3
// (cycles_amd64.s) and returns their product, 3^(8n) mod 2^64.
func mulChain(n uint64) uint64
