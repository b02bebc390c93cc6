// Package claims holds the published figures this suite checks, those of
// docs/claims.md, each with the measurement that checks it: the rows and
// units of a results file that measure the same quantity here, the boot
// (labels) a file must come from to measure it, and for claims about a
// path's length the same rows in instruction-count files.
//
// It is a table, not logic: adding a claim is adding a row (All), and the
// published figure is converted to ns per packet or call with the range
// its source allows once, here (Published, MppsDelta). Judging a
// measurement against it is the verdict package's.
package claims

import "math"

// The published figures of docs/claims.md, each with the measurement that
// checks it: the document and this table carry the same IDs
// (TestClaimsDocument). Adding a claim is adding a row:
// what was claimed, the published figure converted to ns per packet or
// call with the range its source allows (Published), and which
// benchmark's metric measures the same quantity here (Measure); for a
// claim that also says which way a path's instruction count goes, the
// same rows in instruction-count files (Shape); for one without a figure,
// what a file's labels mean for it (Info). Every selector must match a
// row the suite writes (TestClaimSelectorsMatchResults).
//
// The published range is the published figure's own uncertainty, from how
// it was produced: a whole-ns figure from test_run is truncated, a rate
// from xdp_rxq_info is noisy to ~4%. It deliberately allows nothing for
// the authors' hardware being different from this machine's: whether the
// figure carries over to the machine in front of you is what the verdict
// answers.
var All = []Claim{
	// §1 The BPF dispatcher, test_run (xdp_perf) figures.
	{
		ID:        "1.1",
		Text:      "the dispatcher's direct call saves ~10 ns per call over the retpoline'd indirect call",
		Published: truncDiff(15-5, 2, "xdp_perf 15 -> 5 ns/op, mitigations=auto"),
		Measure: Measure{
			What: "indirect call (prog=tc) minus direct call (k0), paired rounds",
			A:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(retpolines),
		},
	},
	{
		ID:        "1.2",
		Text:      "an XDP_DROP program costs ~5 ns per run through the dispatcher (xdp_perf)",
		Published: truncated(5, "xdp_perf 5 ns/op with the dispatcher, with and without mitigations"),
		Measure: Measure{
			What: "prog=drop on a 64-byte frame, held in the dispatcher",
			A:    sel("BenchmarkXDP/prog=drop/size=64", "ns/op"),
		},
	},
	{
		ID:        "1.3",
		Text:      "a full dispatcher costs ~3 ns more than no dispatcher (its fallback walks the entries, then calls indirectly)",
		Published: truncDiff(18-15, 2, "xdp_perf 18 vs 15 ns/op (native 20.4 vs 22.0 Mpps = 3.6 ns/pkt)"),
		Measure: Measure{
			What: "full dispatcher (fallback) minus indirect call (prog=tc), each paired with k0",
			A:    sel("BenchmarkDispatcher/dispatcher=full/fill=generic/prog=xdp", "delta-ns/op").on(retpolines),
			B:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(retpolines),
		},
	},
	{
		ID:        "1.4",
		Text:      "with mitigations=off the dispatcher saves nothing",
		Published: truncDiff(5-5, 2, "xdp_perf 5 -> 5 ns/op, mitigations=off"),
		Measure: Measure{
			What: "indirect call (prog=tc) minus direct call (k0), paired rounds",
			A:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(mitigationsOff),
		},
	},
	{
		ID:        "1.5",
		Text:      "what the dispatcher saves is one retpoline: ~10 ns more with retpolines than with mitigations=off (\"~10-12 ns\")",
		Published: truncDiff((15-5)-(5-5), 4, "xdp_perf (15-5) - (5-5) ns/op"),
		Measure: Measure{
			What: "the saving (prog=tc minus k0) with retpolines minus the same with mitigations=off",
			A:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(retpolines),
			B:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(mitigationsOff),
		},
		Same: []string{"cfi"},
	},
	{
		ID:        "1.6",
		Text:      "one retpoline costs ~10-12 ns (the reviewer's figure)",
		Published: Published{Value: 11, Lo: 10, Hi: 12, Unit: "ns/call", From: "\"~10-12 ns cost of one retpoline\"", Why: "the range as stated"},
		Measure: Measure{
			What: "a tail call (the JIT's retpoline'd indirect jump, plus its index and count checks) minus the baseline call",
			A:    sel("BenchmarkCall/call=tailcall/hops=1", "delta-ns/op").on(retpolines),
			Note: "an upper bound: the tail call also checks the index and the count",
		},
	},
	// §1 The BPF dispatcher, real packets (attach runs).
	{
		ID:        "1.7",
		Text:      "native XDP_DROP: the dispatcher saves ~11.4 ns per packet",
		Published: mpps(22.0, 29.4, "xdp_rxq_info native 22.0 -> 29.4 Mpps, mitigations=auto"),
		Measure: Measure{
			What: "the receiver called through a full dispatcher's fallback minus the same receiver called directly from an equally full one, native veth, paired rounds",
			A:    sel("BenchmarkAttach/action=drop/mode=native/prog=drop/dispatcher=full", "delta-ns/pkt").on(retpolines),
		},
	},
	{
		ID:        "1.8",
		Text:      "generic (SKB) XDP_DROP: the dispatcher saves ~13.2 ns per packet",
		Published: mpps(3.8, 4.0, "xdp_rxq_info generic 3.8 -> 4.0 Mpps, mitigations=auto"),
		Measure: Measure{
			What: "fallback minus direct call at equal occupancy, generic XDP on veth, paired rounds",
			A:    sel("BenchmarkAttach/action=drop/mode=generic/prog=drop/dispatcher=full", "delta-ns/pkt").on(retpolines),
		},
	},
	{
		ID:        "1.9",
		Text:      "native XDP_DROP with mitigations=off: the dispatcher saves ~1.2 ns per packet (\"may be noise\")",
		Published: mpps(29.6, 30.7, "xdp_rxq_info native 29.6 -> 30.7 Mpps, mitigations=off"),
		Measure: Measure{
			What: "fallback minus direct call at equal occupancy, native veth, paired rounds",
			A:    sel("BenchmarkAttach/action=drop/mode=native/prog=drop/dispatcher=full", "delta-ns/pkt").on(mitigationsOff),
		},
	},
	// §2 A check of bpf_func before the call: today's kCFI/FineIBT.
	{
		ID:        "2.1",
		Text:      "checking bpf_func before the call costs ~1.7 ns per packet (~4%)",
		Published: mpps(22.9987, 23.923874, "xdp_rxq_info 23,923,874 -> 22,998,700 pps"),
		Measure: Measure{
			What: "the indirect call's cost (prog=tc minus k0) on a kCFI/FineIBT kernel minus the same without CFI",
			A:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(cfiOn),
			B:    sel("BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", "delta-ns/op").on(cfiOff),
		},
		Same:  []string{"mitigations", "retpoline"},
		Shape: counted(Longer, "the indirect call's instructions (prog=tc minus k0) on a kCFI kernel minus the same kernel without CFI", icount(cfiOn), icount(cfiOff)),
	},
	{
		ID:        "2.2",
		Text:      "the dispatcher's direct call is not CFI-checked: on a kCFI kernel an XDP run costs what it does without",
		Published: noEffect(1000/23.923874, "the dispatcher patch's argument (2019): a direct call needs no check; no figure on a CFI kernel"),
		Measure: Measure{
			What: "XDP drop through the dispatcher (k0, ns/op) on a kCFI/FineIBT kernel minus the same without CFI",
			A:    sel("BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp", "ns/op").on(cfiOn),
			B:    sel("BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp", "ns/op").on(cfiOff),
		},
		Same:  []string{"mitigations", "retpoline"},
		Shape: counted(Unchanged, "XDP drop's instructions through the dispatcher (k0) on a kCFI kernel minus the same kernel without CFI", icount(cfiOn), icount(cfiOff)),
	},
	{
		ID:        "2.3",
		Text:      "past 48 programs the dispatcher's fallback is an indirect call that kCFI checks",
		Published: noEffect(1000/23.923874, "expected in the kCFI issue of this suite: kCFI checks every indirect call into a BPF program the direct call does not cover; no published figure"),
		Measure: Measure{
			What: "the fallback's cost (full minus k0, native) on a kCFI/FineIBT kernel minus the same without CFI",
			A:    sel("BenchmarkDispatcher/dispatcher=full/fill=native/prog=xdp", "delta-ns/op").on(cfiOn),
			B:    sel("BenchmarkDispatcher/dispatcher=full/fill=native/prog=xdp", "delta-ns/op").on(cfiOff),
		},
		Same:  []string{"mitigations", "retpoline"},
		Shape: counted(Longer, "the fallback's instructions (full minus k0, native) on a kCFI kernel minus the same kernel without CFI", icount(cfiOn), icount(cfiOff)),
	},
	// Trampolines: the selftests bench trigger figures (2025).
	{
		ID:        "T.1",
		Text:      "an fentry program costs ~5.1 ns per call of the function it traces",
		Published: rated(7.4, 2.3, "selftests bench: fentry 7.4 vs base 2.3 ns per trigger"),
		Measure: Measure{
			What: "a driver calling bpf_get_numa_node_id in a bpf_loop, with an fentry program on it minus without, per call, paired rounds",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op"),
		},
	},
	{
		ID:        "T.2",
		Text:      "an fexit program costs ~12.4 ns per call of the function it traces",
		Published: rated(14.7, 2.3, "selftests bench: fexit 14.7 vs base 2.3 ns per trigger"),
		Measure: Measure{
			What: "the same with an fexit program",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fexit", "delta-ns/op"),
		},
	},
	{
		ID:        "T.3",
		Text:      "a raw tracepoint program costs ~2.8 ns per hit",
		Published: rated(5.1, 2.3, "selftests bench: rawtp 5.1 vs base 2.3 ns per trigger"),
		Measure: Measure{
			What: "a driver calling bpf_modify_return_test_tp (fires bpf_trigger_tp) with a raw tracepoint program on it minus without, per call, paired rounds",
			A:    sel("BenchmarkTrampoline/target=kfunc/attach=rawtp", "delta-ns/op"),
		},
	},
	// §3 AF_XDP and redirect, real packets.
	{
		ID:        "3.1",
		Text:      "XDP_REDIRECT costs ~6.7 ns per packet more than XDP_TX",
		Published: mpps(13.24, 14.53, "XDP_REDIRECT 13.24 vs XDP_TX 14.53 Mpps"),
		Measure: Measure{
			What: "the redirect row's paired delta against its reference, action=tx (same mode, program and dispatcher), measured in the same rounds; native veth",
			A:    sel("BenchmarkAttach/action=redirect/mode=native/prog=drop/dispatcher=direct", "delta-ns/pkt"),
		},
	},
	{
		ID:        "3.2",
		Text:      "AF_XDP rx-drop in copy mode costs ~47 ns per packet more than XDP_DROP in the kernel",
		Published: mpps(13.07, 34.25, "AF_XDP copy rx-drop 13.07 vs XDP_DROP 34.25 Mpps"),
		Measure: Measure{
			What: "AF_XDP copy-mode rx-drop minus in-kernel XDP_DROP, paired on the receiving CPU",
			A:    sel("BenchmarkAFXDP/app=rxdrop/mode=copy", "delta-ns/pkt"),
		},
	},
	{
		ID:        "3.3",
		Text:      "AF_XDP l2fwd in copy mode costs ~244 ns per packet more than XDP_TX in the kernel",
		Published: mpps(3.20, 14.53, "AF_XDP copy l2fwd 3.20 vs XDP_TX 14.53 Mpps"),
		Measure: Measure{
			What: "AF_XDP copy-mode l2fwd (the application's ns/pkt) minus in-kernel XDP_TX (rx-ns/pkt)",
			A:    sel("BenchmarkAFXDP/app=l2fwd/mode=copy", "remote-ns/pkt"),
			B:    sel("BenchmarkAFXDP/app=l2fwd/mode=kernel", "rx-ns/pkt"),
		},
	},
	// §4 cpumap redirect.
	{
		ID:        "4.1",
		Text:      "after a cpumap redirect, dropping in the UDP stack (no socket) costs ~153 ns per packet more than an early drop",
		Published: mpps(3.520250, 7.649604, "cpumap, all patches: UdpNoPorts 3,520,250 vs iptables-raw 7,649,604 pps"),
		Measure: Measure{
			What: "drop=noports minus drop=cpumap-prog (an early drop before any skb, not iptables-raw) on the remote CPU",
			A:    sel("BenchmarkCpumap/redirect=cpumap/drop=noports", "remote-ns/pkt"),
			B:    sel("BenchmarkCpumap/redirect=cpumap/drop=cpumap-prog", "remote-ns/pkt"),
		},
	},
	// §5 UDP 4-tuple hash: a kernel change, so two kernels.
	{
		ID:        "5.1",
		Text:      "the UDP 4-tuple hash costs unconnected-socket receive nothing measurable (\"negligible\")",
		Published: noEffect(1e9/1104735, "udpgso_bench_rx 1,096,329 -> 1,104,735 calls/s (+0.8%)"),
		Measure: Measure{
			What: "ns per datagram received, kernel with the hash minus kernel without",
			A:    sel("BenchmarkUDP/recv=recv", "remote-ns/pkt").on(udpHash),
			B:    sel("BenchmarkUDP/recv=recv", "remote-ns/pkt").on(noUDPHash),
			Note: "valid only where the receiver was CPU-bound (docs/claims.md §5)",
		},
		Same: []string{"mitigations", "retpoline", "cfi"},
	},
	// §6 The trampoline's "jmp" mode (Linux 6.19).
	{
		ID:        "6.1",
		Text:      "jmp mode: an fexit program costs ~5.1 ns less per call (fexit 80.5 -> 136.5 M/s)",
		Published: triggers(136.5, 80.5, "run_bench_trigger.sh, trig-fexit 80.5 -> 136.5 M/s (12.42 -> 7.33 ns per trigger)"),
		Measure: Measure{
			What: "the fexit row's paired delta against its base on a kernel from 6.19 on minus the same on a kernel before 6.19",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fexit", "delta-ns/op").on(jmpKernel),
			B:    sel("BenchmarkTrampoline/target=helper/attach=fexit", "delta-ns/op").on(callKernel),
			Note: "the two files differ in everything else the kernels changed between them",
		},
		Same:  []string{"mitigations", "retpoline", "cfi"},
		Shape: counted(Shorter, "the fexit row's delta in instructions per call, newer kernel minus older", icountJmp, icountCall),
	},
	{
		ID:        "6.2",
		Text:      "jmp mode: an fmod_ret program costs ~6.5 ns less per call (fmod_ret 78.3 -> 159.2 M/s)",
		Published: triggers(159.2, 78.3, "run_bench_trigger.sh, trig-fmodret 78.3 -> 159.2 M/s (12.77 -> 6.28 ns per trigger)"),
		Measure: Measure{
			What: "the fmod_ret row's paired delta against its base (target=kfunc) on a kernel from 6.19 on minus the same before 6.19",
			A:    sel("BenchmarkTrampoline/target=kfunc/attach=fmod_ret", "delta-ns/op").on(jmpKernel),
			B:    sel("BenchmarkTrampoline/target=kfunc/attach=fmod_ret", "delta-ns/op").on(callKernel),
			Note: "the two files differ in everything else the kernels changed between them",
		},
		Same:  []string{"mitigations", "retpoline", "cfi"},
		Shape: counted(Shorter, "the fmod_ret row's delta in instructions per call, newer kernel minus older", icountJmp, icountCall),
	},
	{
		ID:        "6.3",
		Text:      "jmp mode: an fentry program costs the same (fentry ~171 M/s before and after)",
		Published: noEffect(1000/171.0, "run_bench_trigger.sh, trig-fentry ~171 M/s before and after (5.85 ns per trigger)"),
		Measure: Measure{
			What: "the fentry row's paired delta against its base on a kernel from 6.19 on minus the same before 6.19",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(jmpKernel),
			B:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(callKernel),
			Note: "the two files differ in everything else the kernels changed between them",
		},
		Same:  []string{"mitigations", "retpoline", "cfi"},
		Shape: counted(Unchanged, "the fentry row's delta in instructions per call, newer kernel minus older", icountJmp, icountCall),
	},
	{
		ID:        "6.4",
		Text:      "jmp mode: a kprobe costs ~2.6 ns less per call (kprobe 52.0 -> 60.0 M/s)",
		Published: triggers(60.0, 52.0, "run_bench_trigger.sh, trig-kprobe 52.0 -> 60.0 M/s (19.23 -> 16.67 ns per trigger)"),
		Measure: Measure{
			What: "the kprobe row's paired delta against its base on a kernel from 6.19 on minus the same before 6.19",
			A:    sel("BenchmarkTrampoline/target=helper/attach=kprobe", "delta-ns/op").on(jmpKernel),
			B:    sel("BenchmarkTrampoline/target=helper/attach=kprobe", "delta-ns/op").on(callKernel),
			Note: "the two files differ in everything else the kernels changed between them",
		},
		Same: []string{"mitigations", "retpoline", "cfi"},
	},
	// §7 Run-time statistics.
	{
		ID:   "7.1",
		Text: "run-time stats (kernel.bpf_stats_enabled) add ~20 ns per run of a fast program",
		Published: Published{Value: 20, Lo: 10, Hi: 30, Unit: "ns/op",
			From: "commit 492ecee8: \"two sched_clock() per program invocation adds ~20 nsec ... from ~10 nsec to ~30 nsec\"",
			Why:  "30 - 10, two figures given to the nearest 10 ns (~10, ~30): +-5 ns each, +-10 ns on the difference"},
		Measure: Measure{
			What: "prog=drop with run-time stats on (BPF_ENABLE_STATS) minus the same with them off, paired rounds",
			A:    sel("BenchmarkMitigations/prog=drop/stats=on", "delta-ns/op"),
		},
	},
	{
		ID:   "7.2",
		Text: "run-time stats cost two clock reads per run, ~20 ns each: ~40 ns (Cilium CFP-46760, 2026)",
		Published: Published{Value: 40, Lo: 30, Hi: 50, Unit: "ns/op",
			From: "cilium/design-cfps#101 (CFP-46760, August 2026): \"two clock reads per run, about 20 ns each on bare metal\"",
			Why:  "2 x 20 ns, each given to the nearest 10 ns: +-5 ns each, +-10 ns on the sum"},
		Measure: Measure{
			What: "prog=drop with run-time stats on (BPF_ENABLE_STATS) minus the same with them off, paired rounds",
			A:    sel("BenchmarkMitigations/prog=drop/stats=on", "delta-ns/op"),
			Note: "the anatomy counts the clock reads per run (docs/claims.md#mechanisms-what-the-anatomy-must-count)",
		},
	},
	// §8 Indirect target selection (ITS).
	{
		ID:        "8.1",
		Text:      "ITS: on affected Intel CPUs BPF's indirect branches and returns go through thunks (no published figure)",
		Published: Published{Unit: "ns/call", From: "Documentation/admin-guide/hw-vuln/indirect-target-selection.rst; BPF JIT emit_indirect_jump()", Why: "no published figure for BPF"},
		Info:      itsInfo,
	},
	// §9 The trampoline of 2026: fsession, tracing multi-links, and
	// what mitigations do to a trampoline call.
	{
		ID:        "9.1",
		Text:      "mitigations multiply what an fentry program adds to a call ~4.7 times (+15.3 ns with mitigations=off, +71.7 ns with the defaults)",
		Published: rated(75.4-3.74, 16.2-0.90, "bpf-next 00/25 (Menglong Dong, 2025-05-28): fentry 75.4 ns and the bare function 3.74 ns by default, 16.2 and 0.90 with mitigations=off, 10M calls of bpf_fentry_test1"),
		Measure: Measure{
			What: "the fentry row's paired delta on a boot with the default mitigations minus the same on a mitigations=off boot of one kernel",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(mitigationsDefault),
			B:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(mitigationsOff),
			Note: "which events the mitigating boots add per call is judged under Mechanisms (9.1)",
		},
		Same:  []string{"kernel", "cfi"},
		Shape: counted(Longer, "the fentry row's delta in instructions per call, default boot minus mitigations=off", icount(mitigationsDefault), icount(mitigationsOff)),
	},
	{
		ID:        "9.2",
		Text:      "a tracing multi-link's fentry costs ~1.7 ns more per call than a plain fentry (mitigations=off; the posting's design)",
		Published: rated(17.9, 16.2, "bpf-next 00/25 (Menglong Dong, 2025-05-28; a global trampoline with a hash lookup, not the per-function trampolines Linux 7.3 ships): fentry_multi 17.9, fentry 16.2 ns, mitigations=off"),
		Measure: Measure{
			What: "the fentry-multi row's paired delta minus the fentry row's, one file",
			A:    sel("BenchmarkTrampoline/target=helper/attach=fentry-multi", "delta-ns/op").on(multiOff),
			B:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(multiOff),
		},
		Shape: counted(Longer, "the fentry-multi row's delta in instructions per call minus the fentry row's, one file", icountMulti, icountMulti),
	},
	{
		ID:        "9.3",
		Text:      "a kprobe-multi program costs ~5.9 ns more per call than an fentry program (mitigations=off)",
		Published: rated(22.1, 16.2, "bpf-next 00/25 (Menglong Dong, 2025-05-28): kprobe_multi 22.1, fentry 16.2 ns, mitigations=off"),
		Measure: Measure{
			What: "the kprobe-multi row's paired delta minus the fentry row's, one file",
			A:    sel("BenchmarkTrampoline/target=helper/attach=kprobe-multi", "delta-ns/op").on(mitigationsOff),
			B:    sel("BenchmarkTrampoline/target=helper/attach=fentry", "delta-ns/op").on(mitigationsOff),
		},
		Shape: counted(Longer, "the kprobe-multi row's delta in instructions per call minus the fentry row's, one file", icountAny, icountAny),
	},
	{
		ID:        "9.4",
		Text:      "one fsession program costs less than an fentry and an fexit program on the same function (no published figure)",
		Published: Published{Value: 0, Lo: math.Inf(-1), Hi: 0, Unit: "ns/call", From: "the fsession postings (v1-v13, merged for Linux 7.0): no cost figure", Why: "any saving: the interval below 0"},
		Measure: Measure{
			What: "the fsession row's paired delta minus the both/progs=2 row's (an fentry and an fexit program), one file",
			A:    sel("BenchmarkTrampoline/target=xdp/attach=fsession/progs=1", "delta-ns/op").on(fsessionKernel),
			B:    sel("BenchmarkTrampoline/target=xdp/attach=both/progs=2", "delta-ns/op").on(fsessionKernel),
		},
		Shape: counted(Shorter, "the fsession row's delta in instructions per call minus the both/progs=2 row's, one file", icountFsession, icountFsession),
	},
}
