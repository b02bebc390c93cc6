// Package bpf holds the suite's BPF programs as Go sees them: the bpf2go
// loaders (generated from progs/ and committed, so that `go test` never
// needs clang), the trivial programs the suite builds in code, and the
// frames it feeds them. Everything else lives in the packages below it:
// measure (the one rounds engine), host (what the suite changes on the
// machine and undoes), labels, probe, rig (dispatcher and traffic rigs),
// xsk and iface.
package bpf

// Regenerate with `make generate` (needs clang, llvm-strip and libbpf-dev).
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf XDP ../progs/xdp.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Dispatcher ../progs/dispatcher.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Call ../progs/call.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Attach ../progs/attach.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Trampoline ../progs/trampoline.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Afxdp ../progs/afxdp.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Cpumap ../progs/cpumap.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Helper ../progs/helper.c
