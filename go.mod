module bpfbench

go 1.26.8

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794
	github.com/cilium/ebpf v0.22.0
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	golang.org/x/sys v0.50.0
)

require github.com/vishvananda/netns v0.0.5 // indirect

tool (
	github.com/cilium/ebpf/cmd/bpf2go
	golang.org/x/perf/cmd/benchstat
)
