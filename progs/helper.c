// SPDX-License-Identifier: GPL-2.0
/*
 * The helper family: what one helper call costs an XDP program. Each
 * program adds what its helper returns to a global, so the call cannot be
 * left out; none adds a constant instead, the same load, add and store
 * without the call.
 */
#include "include/common.h"

volatile __u64 runs;
volatile __u64 sink;

SEC("xdp")
int none(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	sink += 1;
	return XDP_DROP;
}

/* The clock read that run-time stats make twice a run (docs/claims.md 7.2). */
SEC("xdp")
int ktime_get_ns(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	sink += bpf_ktime_get_ns();
	return XDP_DROP;
}

SEC("xdp")
int get_smp_processor_id(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	sink += bpf_get_smp_processor_id();
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
