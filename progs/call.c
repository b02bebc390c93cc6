// SPDX-License-Identifier: GPL-2.0
/*
 * The call family: the same work (count a hop in a global, return XDP_DROP)
 * reached in different ways, so that what the x86 JIT emits for each kind of
 * call shows up as time:
 *
 *   inline          the work in the entry program itself;
 *   bpf2bpf         the entry calls a global (non-static, noinline) function:
 *                   a bpf-to-bpf call, a direct call in the JITed image;
 *   tail_entry_var  a chain of tail calls through chain_var whose index the
 *                   verifier cannot know: the JIT emits bounds and tail call
 *                   count checks and an indirect jump (through a retpoline
 *                   where retpolines are on);
 *   tail_entry_const the same chain with constant indices: the verifier
 *                   records them and the JIT emits a direct jump it patches
 *                   when the slot changes (since 5.5), no retpoline.
 *
 * A chain of N tail calls is entry -> slot 0 -> ... -> slot N-1: slots 0..N-2
 * hold hop_<kind>_<slot>, which tail-calls slot+1, and slot N-1 holds
 * end_<kind>, which does not. Every program in a chain counts a hop, so the
 * suite can prove the chain ran N hops per run.
 */
#include "include/common.h"

/* A chain has up to MAX_HOPS tail calls; the kernel allows 33 (MAX_TAIL_CALL_CNT). */
#define MAX_HOPS 32

/* Runs of the inline and bpf2bpf entries. */
volatile __u64 runs;
/* Runs of the tail call entries: a separate counter, so the suite can tell
 * them apart from the baseline's runs when it checks the hop count. */
volatile __u64 tail_runs;
/* The work: every program that does it counts one hop. */
volatile __u64 hops;
/* Always 0, but the verifier cannot know: it makes chain_var's indices
 * unknown. The const chain loads it too, so both do the same work. */
volatile __u32 zero;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MAX_HOPS);
	__type(key, __u32);
	__type(value, __u32);
} chain_var SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, MAX_HOPS);
	__type(key, __u32);
	__type(value, __u32);
} chain_const SEC(".maps");

static __always_inline int work(void)
{
	hops++;
	return XDP_DROP;
}

SEC("xdp")
int inline_entry(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return work();
}

/* Global, so the verifier checks it on its own and the JIT calls it. */
__noinline int work_global(struct xdp_md *ctx)
{
	if (!ctx)
		return XDP_ABORTED;
	return work();
}

SEC("xdp")
int bpf2bpf_entry(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return work_global(ctx);
}

/* A failed tail call falls through: XDP_ABORTED, and a hop count short by
 * the rest of the chain, which the suite notices. */
SEC("xdp")
int tail_entry_var(struct xdp_md *ctx)
{
	COUNT_RUN(tail_runs);
	bpf_tail_call(ctx, &chain_var, zero);
	return XDP_ABORTED;
}

SEC("xdp")
int tail_entry_const(struct xdp_md *ctx)
{
	__u32 z = zero;

	barrier_var(z);
	COUNT_RUN(tail_runs);
	bpf_tail_call(ctx, &chain_const, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int end_var(struct xdp_md *ctx)
{
	return work();
}

SEC("xdp")
int end_const(struct xdp_md *ctx)
{
	return work();
}

#define HOP(i)								\
SEC("xdp")								\
int hop_var_##i(struct xdp_md *ctx)					\
{									\
	hops++;								\
	bpf_tail_call(ctx, &chain_var, (i) + 1 + zero);			\
	return XDP_ABORTED;						\
}									\
									\
SEC("xdp")								\
int hop_const_##i(struct xdp_md *ctx)					\
{									\
	__u32 z = zero;							\
									\
	barrier_var(z);							\
	hops++;								\
	bpf_tail_call(ctx, &chain_const, (i) + 1);			\
	return XDP_ABORTED;						\
}

/* Slots 0..MAX_HOPS-2: the last slot of a full chain holds end_<kind>. */
HOP(0) HOP(1) HOP(2) HOP(3) HOP(4) HOP(5) HOP(6) HOP(7)
HOP(8) HOP(9) HOP(10) HOP(11) HOP(12) HOP(13) HOP(14) HOP(15)
HOP(16) HOP(17) HOP(18) HOP(19) HOP(20) HOP(21) HOP(22) HOP(23)
HOP(24) HOP(25) HOP(26) HOP(27) HOP(28) HOP(29) HOP(30)

char _license[] SEC("license") = "GPL";
