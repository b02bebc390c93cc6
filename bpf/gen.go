// Package bpf holds the suite's BPF programs (generated loaders, committed so
// that `go test` never needs clang) and what every benchmark family needs:
// measuring a BPF_PROG_TEST_RUN loop, private namespaces with veth, sysctl
// changes that undo themselves, and the labels that say where a result came
// from.
package bpf

// Regenerate with `make generate` (needs clang, llvm-strip and libbpf-dev).
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf XDP ../progs/xdp.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Dispatcher ../progs/dispatcher.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Call ../progs/call.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Attach ../progs/attach.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Trampoline ../progs/trampoline.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Afxdp ../progs/afxdp.c
//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -go-package bpf Cpumap ../progs/cpumap.c
