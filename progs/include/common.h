/* Shared by every benchmark program. */
#ifndef BPFBENCH_COMMON_H
#define BPFBENCH_COMMON_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/*
 * Every program counts its runs in a global, so a benchmark can prove the
 * program ran as often as it reports (and notice a loop the kernel restarted
 * after EINTR). test_run executes on one CPU with migration disabled, so a
 * plain increment is exact there; it costs one load and one store per run.
 */
#define COUNT_RUN(counter) ((counter)++)

#endif
