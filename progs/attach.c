// SPDX-License-Identifier: GPL-2.0
/*
 * The attach family: real frames through XDP on a device.
 *
 * gen runs under BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (5.18+),
 * the method of xdp-trafficgen: each repetition is a fresh frame from a page
 * pool that the program redirects through the DEVMAP gen_tx out of the
 * sending veth, so it arrives on the peer's RX queue. The DEVMAP is filled by
 * a thread inside the suite's namespace: a bare bpf_redirect() resolves its
 * ifindex in the namespace of the thread calling test_run, and a miss there
 * vanishes silently. gen_drop makes the same frames and drops them: the
 * generator's own cost, the family's baseline.
 *
 * The receivers rx_drop, rx_parse and rx_touch are attached (native or
 * generic) to the receiving veth and do what xdp.c's drop, parse and touch
 * do, then return rx_action, which the loader fixes in .rodata so the
 * verifier removes the other branches. sink, attached natively to the sending
 * veth, counts and drops what the receiver sends back (XDP_TX, or
 * XDP_REDIRECT through rx_fwd).
 *
 * Every program counts the frames it sees per CPU, and the receivers and
 * sink per RX queue (ctx->rx_queue_index), in PERCPU_ARRAY maps: these
 * programs run on several CPUs at once, so a plain global counter would race.
 * The counts are the only trusted record of what happened: test_run reports
 * success even when every redirect fails.
 */
#include "include/common.h"
#include "include/packet.h"
#include "include/queues.h"

/* The receivers' verdict: XDP_DROP, XDP_PASS, XDP_TX or XDP_REDIRECT. */
volatile const __u32 rx_action = XDP_DROP;

/* Frames made by gen or gen_drop, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} gen_count SEC(".maps");

/* Key 0: the device gen sends out of. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gen_tx SEC(".maps");

/* Frames the receiver sent back that arrived at the sink, per CPU and RX queue. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_QUEUES + 1);
	__type(key, __u32);
	__type(value, __u64);
} sink_count SEC(".maps");

/* Key 0: where rx_action == XDP_REDIRECT sends frames. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rx_fwd SEC(".maps");

/* Per-protocol counts: rx_parse's side effect. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROTO_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rx_proto SEC(".maps");

SEC("xdp")
int gen(struct xdp_md *ctx)
{
	count(&gen_count, 0);
	return bpf_redirect_map(&gen_tx, 0, 0);
}

SEC("xdp")
int gen_drop(struct xdp_md *ctx)
{
	count(&gen_count, 0);
	return XDP_DROP;
}

static __always_inline int verdict(void)
{
	if (rx_action == XDP_REDIRECT)
		return bpf_redirect_map(&rx_fwd, 0, 0);
	return rx_action;
}

SEC("xdp")
int rx_drop(struct xdp_md *ctx)
{
	count(&rx_count, ctx->rx_queue_index);
	return verdict();
}

/* rx_parse reads Ethernet, IPv4 or IPv6, and UDP headers and counts per protocol. */
SEC("xdp")
int rx_parse(struct xdp_md *ctx)
{
	count(&rx_count, ctx->rx_queue_index);
	parse_count((void *)(long)ctx->data, (void *)(long)ctx->data_end, &rx_proto);
	return verdict();
}

/* rx_touch swaps the Ethernet addresses: the "write" case. */
SEC("xdp")
int rx_touch(struct xdp_md *ctx)
{
	count(&rx_count, ctx->rx_queue_index);
	swap_macs((void *)(long)ctx->data, (void *)(long)ctx->data_end);
	return verdict();
}

SEC("xdp")
int sink(struct xdp_md *ctx)
{
	count(&sink_count, ctx->rx_queue_index);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
