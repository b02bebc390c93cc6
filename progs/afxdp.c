// SPDX-License-Identifier: GPL-2.0
/*
 * The AF_XDP family: frames handed to user space.
 *
 * xsk_redirect runs natively on the rig's receiving veth (see attach.c) and
 * redirects every frame through the XSKMAP xsks to the AF_XDP socket bound to
 * the frame's RX queue (bpf_redirect_map, 4.18+). The socket is in copy mode
 * on veth, which has no zero-copy: the redirect copies the frame into the
 * socket's UMEM and puts a descriptor on its RX ring (net/xdp/xsk.c
 * __xsk_rcv). The flags argument's low bits are the verdict when no socket
 * is bound to the queue (5.9+): XDP_DROP, so such frames are lost, not
 * passed, and the benchmark counts them as lost.
 *
 * rx_count is the rig's counter (the loader replaces this map with the
 * rig's), so the rig counts this receiver's frames per CPU and RX queue as it
 * counts its own receivers'.
 */
#include "include/common.h"
#include "include/queues.h"

/* Key: RX queue; value: the AF_XDP socket bound to it. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

SEC("xdp")
int xsk_redirect(struct xdp_md *ctx)
{
	count(&rx_count, ctx->rx_queue_index);
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_DROP);
}

char _license[] SEC("license") = "GPL";
