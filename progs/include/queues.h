/* Per-RX-queue counting, shared by the families that receive real frames. */
#ifndef BPFBENCH_QUEUES_H
#define BPFBENCH_QUEUES_H

#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include "common.h"

/* RX queues counted one by one; higher queue indexes share the last slot. */
#define MAX_QUEUES 64

/*
 * Frames seen by the receiver, per CPU and RX queue. Every object that
 * receives real frames has it, and the loader gives afxdp.c's and
 * cpumap.c's programs attach.c's map in place of their own, so the rig
 * counts all receivers in one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_QUEUES + 1);
	__type(key, __u32);
	__type(value, __u64);
} rx_count SEC(".maps");

/*
 * count adds one at key (an RX queue, or 0) of a PERCPU_ARRAY of
 * MAX_QUEUES + 1 counters. Per CPU, because these programs run on several
 * CPUs at once and a plain global counter would race.
 */
static __always_inline void count(void *map, __u32 key)
{
	__u64 *n;

	if (key > MAX_QUEUES)
		key = MAX_QUEUES;
	n = bpf_map_lookup_elem(map, &key);
	if (n)
		COUNT_RUN(*n);
}

#endif
