package sched

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The clocks every measurement reads: the measuring thread's CPU time, and
// the CPU time of the threads that do a measured path's work elsewhere
// (a CPU's ksoftirqd, a cpumap kthread, an application thread).

// ThreadCPU is the calling thread's CPU time in ns.
func ThreadCPU() int64 {
	var ts unix.Timespec
	// CLOCK_THREAD_CPUTIME_ID counts the kernel's loop (it runs in this
	// thread's syscall) and leaves out time this thread was preempted, which
	// the kernel's own timer also leaves out.
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", err))
	}
	return ts.Nano()
}

// CurrentCPU is the CPU the calling thread runs on.
func CurrentCPU() (int, error) {
	var cpu, node uint32
	if _, _, errno := unix.Syscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); errno != 0 {
		return 0, fmt.Errorf("getcpu: %w", errno)
	}
	return int(cpu), nil
}

// KsoftirqdClocks returns the CPU-time clock of every CPU's
// ksoftirqd/<cpu>, the thread that runs a CPU's softirqs when they are
// not run on the way out of an interrupt or a bottom-half-disabled
// section, by CPU. It scans /proc once.
func KsoftirqdClocks() (map[int]int32, error) {
	clocks := map[int]int32{}
	for pid, comm := range processes() {
		var cpu int
		if _, err := fmt.Sscanf(comm, "ksoftirqd/%d", &cpu); err == nil {
			clocks[cpu] = ProcessClock(pid)
		}
	}
	if len(clocks) == 0 {
		return nil, errors.New("no ksoftirqd thread in /proc")
	}
	return clocks, nil
}

// KthreadClock returns the CPU-time clock, for clock_gettime, of the
// kernel thread whose /proc/<pid>/comm is comm, such as ksoftirqd/1 or a
// cpumap kthread: a stage of an attach run on another CPU.
func KthreadClock(comm string) (int32, error) {
	pid := findKthread(comm)
	if pid <= 0 {
		return 0, fmt.Errorf("no kernel thread %q in /proc", comm)
	}
	return ProcessClock(pid), nil
}

// ProcessClock returns the CPU-time clock, for clock_gettime, of process
// pid: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
// (include/linux/posix-timers.h). The kernel lets a process read only its
// own threads' thread clocks, and a kthread is a process of one thread.
func ProcessClock(pid int) int32 { return int32(^uint32(pid)<<3 | 2) }

// ThreadClock returns the CPU-time clock, for clock_gettime, of thread tid
// of this process: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), which any
// thread of the process may read.
func ThreadClock(tid int) int32 { return int32(^uint32(tid)<<3 | 6) }

func findKthread(comm string) int {
	for pid, c := range processes() {
		if c == comm {
			return pid
		}
	}
	return 0
}

// processes yields every process in /proc with its comm.
func processes() iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			if err == nil && !yield(pid, strings.TrimSpace(string(b))) {
				return
			}
		}
	}
}

// ClockNs reads a CPU-time clock (ThreadClock, ProcessClock, KsoftirqdClocks).
func ClockNs(clock int32) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0, fmt.Errorf("read CPU clock %d: %w", clock, err)
	}
	return ts.Nano(), nil
}
