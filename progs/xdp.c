// SPDX-License-Identifier: GPL-2.0
/*
 * The core XDP programs, run through BPF_PROG_TEST_RUN repeat loops the way
 * the kernel selftest xdp_perf does. drop is that selftest's program (plus
 * the run counter); the others add the reading and writing a real XDP
 * program does.
 */
#include "include/common.h"
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

volatile __u64 runs;

SEC("xdp")
int drop(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return XDP_DROP;
}

SEC("xdp")
int pass(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return XDP_PASS;
}

SEC("xdp")
int tx(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return XDP_TX;
}

enum proto {
	PROTO_OTHER,
	PROTO_IPV4,
	PROTO_IPV6,
	PROTO_UDP,
	PROTO_MAX,
};

/* Per-protocol packet counts: the "read" case's side effect. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROTO_MAX);
	__type(key, __u32);
	__type(value, __u64);
} proto_count SEC(".maps");

static __always_inline void count_proto(__u32 p)
{
	__u64 *n = bpf_map_lookup_elem(&proto_count, &p);

	if (n)
		(*n)++;
}

/* parse reads Ethernet, IPv4 or IPv6, and UDP headers, counts, and drops. */
SEC("xdp")
int parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 l4 = 0;
	void *l4hdr;

	COUNT_RUN(runs);
	if ((void *)(eth + 1) > end)
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return XDP_DROP;
		count_proto(PROTO_IPV4);
		l4 = ip->protocol;
		l4hdr = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return XDP_DROP;
		count_proto(PROTO_IPV6);
		l4 = ip6->nexthdr;
		l4hdr = ip6 + 1;
	} else {
		count_proto(PROTO_OTHER);
		return XDP_DROP;
	}

	if (l4 == IPPROTO_UDP) {
		struct udphdr *udp = l4hdr;

		if ((void *)(udp + 1) > end)
			return XDP_DROP;
		if (udp->dest)
			count_proto(PROTO_UDP);
	}
	return XDP_DROP;
}

/* touch swaps the Ethernet addresses and sends the frame back: the "write" case. */
SEC("xdp")
int touch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	COUNT_RUN(runs);
	if ((void *)(eth + 1) > end)
		return XDP_DROP;

	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";
