package gauge

const haveChain = true

// mulChain runs n iterations of eight dependent multiplications by 3
// (chain_amd64.s) and returns their product, 3^(8n) mod 2^64.
func mulChain(n uint64) uint64

// mulSpread runs n iterations of four independent multiplications by 3
// and fourteen independent additions (chain_amd64.s) and returns
// 4*3^n + 14n mod 2^64.
func mulSpread(n uint64) uint64
