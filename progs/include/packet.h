/* The packet work the "read" and "write" programs of several families share. */
#ifndef BPFBENCH_PACKET_H
#define BPFBENCH_PACKET_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Keys of a per-protocol count map (a PERCPU_ARRAY of PROTO_MAX __u64). */
enum proto {
	PROTO_OTHER,
	PROTO_IPV4,
	PROTO_IPV6,
	PROTO_UDP,
	PROTO_MAX,
};

static __always_inline void count_proto(void *counts, __u32 p)
{
	__u64 *n = bpf_map_lookup_elem(counts, &p);

	if (n)
		(*n)++;
}

/*
 * parse_count reads the Ethernet, IPv4 or IPv6, and UDP headers of the
 * frame [data, end) and counts each protocol it finds in counts. It stops
 * at the first header the frame is too short for.
 */
static __always_inline void parse_count(void *data, void *end, void *counts)
{
	struct ethhdr *eth = data;
	__u8 l4 = 0;
	void *l4hdr;

	if ((void *)(eth + 1) > end)
		return;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return;
		count_proto(counts, PROTO_IPV4);
		l4 = ip->protocol;
		l4hdr = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return;
		count_proto(counts, PROTO_IPV6);
		l4 = ip6->nexthdr;
		l4hdr = ip6 + 1;
	} else {
		count_proto(counts, PROTO_OTHER);
		return;
	}

	if (l4 == IPPROTO_UDP) {
		struct udphdr *udp = l4hdr;

		if ((void *)(udp + 1) > end)
			return;
		if (udp->dest)
			count_proto(counts, PROTO_UDP);
	}
}

/* swap_macs swaps the Ethernet addresses; 0 when the frame is too short. */
static __always_inline int swap_macs(void *data, void *end)
{
	struct ethhdr *eth = data;
	unsigned char tmp[ETH_ALEN];

	if ((void *)(eth + 1) > end)
		return 0;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return 1;
}

#endif
