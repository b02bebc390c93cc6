// SPDX-License-Identifier: GPL-2.0
/*
 * The dispatcher family's reference for an indirect call: the same work as
 * xdp.c's drop in a program type that test_run calls through
 * prog->bpf_func (a retpoline'd indirect call where retpolines are on, a
 * CFI-checked one on kCFI/FineIBT kernels), never through a dispatcher.
 */
#include "include/common.h"
#include <linux/pkt_cls.h>

volatile __u64 runs;

SEC("tc")
int tc_drop(struct __sk_buff *skb)
{
	COUNT_RUN(runs);
	return TC_ACT_SHOT;
}

SEC("socket")
int socket_drop(struct __sk_buff *skb)
{
	COUNT_RUN(runs);
	return 0;
}

char _license[] SEC("license") = "GPL";
