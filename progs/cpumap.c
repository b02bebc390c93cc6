// SPDX-License-Identifier: GPL-2.0
/*
 * The cpumap family: frames redirected to another CPU.
 *
 * cpu_redirect runs natively on the rig's receiving veth (see attach.c) and
 * redirects every frame through the CPUMAP cpus to target_cpu (4.15+). The
 * redirect only queues the frame: at the end of the NAPI poll the frames go,
 * in bulk, into a ring of the target CPU's kthread (cpumap/<cpu>/map:<id>),
 * which builds an skb for each and hands it to the stack there
 * (kernel/bpf/cpumap.c). When that ring is full the frames are dropped on
 * the redirecting CPU.
 *
 * cpumap_drop is a program of the CPUMAP entry (BPF_XDP_CPUMAP, 5.9+): the
 * kthread runs it on each frame before building an skb, and XDP_DROP ends
 * the frame there, an early drop on the remote CPU. remote_count counts the
 * frames it saw.
 *
 * rx_count is the rig's counter (the loader replaces this map with the
 * rig's), so the rig counts frames on the redirecting side as it counts its
 * own receivers'.
 */
#include "include/common.h"
#include "include/queues.h"

/* CPUs a CPUMAP entry may name. */
#define MAX_CPUS 64

/* The CPU frames are redirected to, fixed by the loader. */
volatile const __u32 target_cpu = 0;

/* Key: CPU; value: its queue size and program. */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, MAX_CPUS);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpus SEC(".maps");

/* Frames cpumap_drop saw, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} remote_count SEC(".maps");

SEC("xdp")
int cpu_redirect(struct xdp_md *ctx)
{
	count(&rx_count, ctx->rx_queue_index);
	return bpf_redirect_map(&cpus, target_cpu, 0);
}

SEC("xdp/cpumap")
int cpumap_drop(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&remote_count, &key);

	if (n)
		COUNT_RUN(*n);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
