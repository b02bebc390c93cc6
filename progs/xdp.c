// SPDX-License-Identifier: GPL-2.0
/*
 * The core XDP programs, run through BPF_PROG_TEST_RUN repeat loops the way
 * the kernel selftest xdp_perf does. drop is that selftest's program (plus
 * the run counter); the others add the reading and writing a real XDP
 * program does.
 */
#include "include/common.h"
#include "include/packet.h"

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

/* Per-protocol packet counts: the "read" case's side effect. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROTO_MAX);
	__type(key, __u32);
	__type(value, __u64);
} proto_count SEC(".maps");

/* parse reads Ethernet, IPv4 or IPv6, and UDP headers, counts, and drops. */
SEC("xdp")
int parse(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	parse_count((void *)(long)ctx->data, (void *)(long)ctx->data_end, &proto_count);
	return XDP_DROP;
}

/* touch swaps the Ethernet addresses and sends the frame back: the "write" case. */
SEC("xdp")
int touch(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	if (!swap_macs((void *)(long)ctx->data, (void *)(long)ctx->data_end))
		return XDP_DROP;
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";

/*
 * add64 is drop with 64 additions to one register before it returns: a
 * dependent chain of register ALU instructions (inline assembly, so the
 * compiler cannot fold it) that the x86-64 JIT turns into one machine
 * instruction each. It calibrates the instruction-count mode: add64 minus
 * drop must come out as the difference of their JIT'ed images, counted
 * instruction by instruction (the benchmark checks it), and on real
 * hardware it is about 64 cycles.
 */
#define ADD1 "%[v] += 1\n"
#define ADD4 ADD1 ADD1 ADD1 ADD1
#define ADD16 ADD4 ADD4 ADD4 ADD4
#define ADD64 ADD16 ADD16 ADD16 ADD16

SEC("xdp")
int add64(struct xdp_md *ctx)
{
	__u64 v = XDP_DROP - 64;

	COUNT_RUN(runs);
	asm volatile(ADD64 : [v] "+r"(v));
	return v;
}
