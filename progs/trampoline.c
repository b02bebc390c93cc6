// SPDX-License-Identifier: GPL-2.0
/*
 * The trampoline family: what a BPF trampoline (fentry, fexit, fmod_ret),
 * an freplace chain and the other kernel hooks cost the code they hook.
 *
 * Three shapes, each with its own uninstrumented baseline:
 *  - target: an XDP program (xdp.c's drop) that fentry/fexit programs attach
 *    to; the attach target is the loaded program, set at load time.
 *  - dispatcher: libxdp's XDP dispatcher, a program calling global stub
 *    functions that freplace programs replace, against single, the same
 *    work inlined in one program.
 *  - drivers: raw_tp programs run by test_run that call a kernel function
 *    `iterations` times in a bpf_loop, as the kernel selftests' trigger
 *    benchmark does; the hooks attach to that function or a tracepoint it
 *    fires.
 *
 * Every program counts its runs; the Go side checks every counter against
 * the repetitions it asked for.
 */
#include "include/common.h"

/* Runs of the XDP programs (target, dispatcher, single) and the drivers. */
volatile __u64 runs;
/* Runs of every hook program: fentry, fexit, fmod_ret, raw_tp, tp, kprobe;
 * an fsession program counts its entry and its exit, as an fentry and an
 * fexit program would. */
volatile __u64 hook_runs;
/* Of those, the fsession programs' runs on the function's return. */
volatile __u64 session_returns;
/* Runs of the chained XDP programs, and of their inlined work in single. */
volatile __u64 chain_runs;
/* Kernel function calls made by the drivers, one per bpf_loop iteration. */
volatile __u64 calls;
/* How many calls one driver run makes; set before each test_run. */
volatile __u32 iterations;

/* ---- fentry/fexit on an XDP program ---- */

SEC("xdp")
int target(struct xdp_md *ctx)
{
	COUNT_RUN(runs);
	return XDP_DROP;
}

/* The Go side loads one fresh copy per attachment (a tracing program whose
 * target is a BPF program cannot be attached again once its link closes). */
SEC("fentry/target")
int on_entry(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("fexit/target")
int on_exit(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

/*
 * fsession (Linux 7.0): one program in both the fentry and the fexit list of
 * the trampoline, told apart by bpf_session_is_return(), which the verifier
 * inlines. The section is libbpf's; cilium/ebpf knows neither it nor the
 * attach type, so the Go side loads and attaches it itself (bpf.LoadSession).
 */
extern _Bool bpf_session_is_return(void *ctx) __ksym __weak;

SEC("fsession/target")
int on_session(void *ctx)
{
	COUNT_RUN(hook_runs);
	if (bpf_session_is_return(ctx))
		COUNT_RUN(session_returns);
	return 0;
}

/* ---- freplace chains, libxdp style ---- */

#define MAX_CHAIN 10
/* A stub that nothing replaced returns this; its bit in every
 * chain_call_actions mask makes the dispatcher go on (libxdp's
 * XDP_DISPATCHER_RETVAL). */
#define STUB_RETVAL 31
#define CHAIN_ACTIONS ((1U << XDP_PASS) | (1U << STUB_RETVAL))

/* Set before load, as libxdp does: the verifier then knows how many stubs
 * are called and removes the rest. */
const volatile __u32 num_progs = 0;
const volatile __u32 chain_call_actions[MAX_CHAIN] = {
	CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS,
	CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS, CHAIN_ACTIONS,
};

/* Global, not inlined: each is a BTF function freplace can target. */
#define STUB(i)                                            \
	__attribute__((noinline)) int prog##i(struct xdp_md *ctx) \
	{                                                  \
		volatile int ret = STUB_RETVAL;            \
		if (!ctx)                                  \
			return XDP_ABORTED;                \
		return ret;                                \
	}
STUB(0) STUB(1) STUB(2) STUB(3) STUB(4) STUB(5) STUB(6) STUB(7) STUB(8) STUB(9)

#define CALL(i, fn)                                                \
	do {                                                       \
		if (num_progs < (i) + 1)                           \
			return XDP_PASS;                           \
		ret = fn;                                          \
		if (!((1U << ret) & chain_call_actions[i]))        \
			return ret;                                \
	} while (0)

SEC("xdp")
int dispatcher(struct xdp_md *ctx)
{
	int ret;

	COUNT_RUN(runs);
	CALL(0, prog0(ctx));
	CALL(1, prog1(ctx));
	CALL(2, prog2(ctx));
	CALL(3, prog3(ctx));
	CALL(4, prog4(ctx));
	CALL(5, prog5(ctx));
	CALL(6, prog6(ctx));
	CALL(7, prog7(ctx));
	CALL(8, prog8(ctx));
	CALL(9, prog9(ctx));
	return XDP_PASS;
}

/* What each chained program does. */
static __always_inline int chain_work(struct xdp_md *ctx)
{
	COUNT_RUN(chain_runs);
	return XDP_PASS;
}

/* The Go side loads one copy per stub, retargeted to prog<i>. */
SEC("freplace/prog0")
int chained(struct xdp_md *ctx)
{
	return chain_work(ctx);
}

/* The dispatcher's work with every chained program inlined: no calls. */
SEC("xdp")
int single(struct xdp_md *ctx)
{
	int ret;

	COUNT_RUN(runs);
	CALL(0, chain_work(ctx));
	CALL(1, chain_work(ctx));
	CALL(2, chain_work(ctx));
	CALL(3, chain_work(ctx));
	CALL(4, chain_work(ctx));
	CALL(5, chain_work(ctx));
	CALL(6, chain_work(ctx));
	CALL(7, chain_work(ctx));
	CALL(8, chain_work(ctx));
	CALL(9, chain_work(ctx));
	return XDP_PASS;
}

/* ---- hooks on kernel functions ---- */

static int call_helper(__u32 i, void *data)
{
	/* bpf_get_numa_node_id is a plain, traceable kernel function the
	 * JIT calls directly: the selftests' attach point. */
	(void)bpf_get_numa_node_id();
	COUNT_RUN(calls);
	return 0;
}

/* raw_tp: test_run runs it once per call, so it loops itself. */
SEC("raw_tp")
int drive_helper(void *ctx)
{
	COUNT_RUN(runs);
	bpf_loop(iterations, call_helper, NULL, 0);
	return 0;
}

/* Since Linux 6.10 (net/bpf/test_run.c): fires the bpf_trigger_tp
 * tracepoint and is an fmod_ret target. */
extern int bpf_modify_return_test_tp(int nonce) __ksym;

static int call_kfunc(__u32 i, void *data)
{
	(void)bpf_modify_return_test_tp(0);
	COUNT_RUN(calls);
	return 0;
}

SEC("raw_tp")
int drive_kfunc(void *ctx)
{
	COUNT_RUN(runs);
	bpf_loop(iterations, call_kfunc, NULL, 0);
	return 0;
}

SEC("fentry/bpf_get_numa_node_id")
int helper_fentry(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("fexit/bpf_get_numa_node_id")
int helper_fexit(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("fsession/bpf_get_numa_node_id")
int helper_fsession(void *ctx)
{
	COUNT_RUN(hook_runs);
	if (bpf_session_is_return(ctx))
		COUNT_RUN(session_returns);
	return 0;
}

/* Tracing multi-links (Linux 7.3: BPF_TRACE_FENTRY_MULTI, FEXIT_MULTI): one
 * link attaches the program to a list of functions; here a list of one. */
SEC("fentry.multi/bpf_get_numa_node_id")
int helper_fentry_multi(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("fexit.multi/bpf_get_numa_node_id")
int helper_fexit_multi(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("kprobe/bpf_get_numa_node_id")
int helper_kprobe(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("kretprobe/bpf_get_numa_node_id")
int helper_kretprobe(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("kprobe.multi/bpf_get_numa_node_id")
int helper_kprobe_multi(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("kretprobe.multi/bpf_get_numa_node_id")
int helper_kretprobe_multi(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

/* Returns 0, so the function still runs (the selftests' fmodret returns
 * -EINVAL and skips it): the delta is the hook alone. */
SEC("fmod_ret/bpf_modify_return_test_tp")
int kfunc_fmod_ret(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("raw_tp/bpf_trigger_tp")
int kfunc_rawtp(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("tp_btf/bpf_trigger_tp")
int kfunc_tp_btf(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

SEC("tracepoint/bpf_test_run/bpf_trigger_tp")
int kfunc_tp(void *ctx)
{
	COUNT_RUN(hook_runs);
	return 0;
}

char _license[] SEC("license") = "GPL";
