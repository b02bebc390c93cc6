package bpf

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// requireRoot skips tests that load programs, with the command that works.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if unix.Geteuid() != 0 {
		tb.Skip("loads BPF programs: run as root, e.g. go test -exec sudo ./bpf")
	}
}

func loadXDP(tb testing.TB) *XDPObjects {
	tb.Helper()
	requireRoot(tb)
	var objs XDPObjects
	if err := LoadXDPObjects(&objs, nil); err != nil {
		tb.Fatalf("load XDP programs: %v", err)
	}
	tb.Cleanup(func() { objs.Close() })
	return &objs
}

func frame(tb testing.TB, size int) []byte {
	tb.Helper()
	f, err := UDPFrame(size)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func TestXDPProgramsReturn(t *testing.T) {
	objs := loadXDP(t)
	in := frame(t, 64)
	for _, tc := range []struct {
		name string
		prog *ebpf.Program
		want uint32
	}{
		{"drop", objs.Drop, 1},
		{"pass", objs.Pass, 2},
		{"tx", objs.Tx, 3},
		{"parse", objs.Parse, 1},
		{"touch", objs.Touch, 3},
	} {
		ret, out, err := tc.prog.Test(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ret != tc.want {
			t.Errorf("%s returned %d, want %d", tc.name, ret, tc.want)
		}
		if tc.name == "touch" && (!bytes.Equal(out[0:6], SrcMAC[:]) || !bytes.Equal(out[6:12], DstMAC[:])) {
			t.Errorf("touch did not swap MAC addresses: got % x", out[:12])
		}
	}
}

func TestParseCountsProtocols(t *testing.T) {
	objs := loadXDP(t)
	if _, _, err := objs.Parse.Test(frame(t, 1500)); err != nil {
		t.Fatal(err)
	}
	// Keys follow enum proto in progs/xdp.c.
	for key, want := range map[uint32]uint64{0: 0, 1: 1, 2: 0, 3: 1} {
		var perCPU []uint64
		if err := objs.ProtoCount.Lookup(key, &perCPU); err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, n := range perCPU {
			sum += n
		}
		if sum != want {
			t.Errorf("proto_count[%d] = %d, want %d", key, sum, want)
		}
	}
}

func TestMeasure(t *testing.T) {
	objs := loadXDP(t)
	// Held in the dispatcher: otherwise each call rebuilds it, and that
	// varying cost can exceed a 10000-run loop.
	h := NewHolder(t, NewNetns(t), objs.Drop)
	l := &Loop{Prog: objs.Drop, Data: frame(t, 64), Runs: objs.Runs, Prepare: h.Held(objs.Drop)}
	var before, after uint64
	objs.Runs.Get(&before)
	var s Sample
	err := Pinned(0, func() (err error) {
		s, err = l.Measure(10000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	objs.Runs.Get(&after)
	// The long call, the short call and the throwaway settling call.
	if got, want := after-before, uint64(10000+2*shortRepeat); got != want && s.Restarts == 0 {
		t.Errorf("program ran %d times, want %d", got, want)
	}
	if s.Repeat != 10000 || !(s.Ns > 0) || math.IsInf(s.Ns, 0) || s.FixedNs <= 0 {
		t.Errorf("implausible sample %+v", s)
	}
}

func TestMeasureDetectsMissingRuns(t *testing.T) {
	objs := loadXDP(t)
	var other DispatcherObjects
	if err := LoadDispatcherObjects(&other, nil); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A counter the measured program never increments: what a benchmark
	// sees when it measures a program that did not run.
	l := &Loop{Prog: objs.Drop, Data: frame(t, 64), Runs: other.Runs}
	_, err := l.Measure(1000)
	if !errors.Is(err, ErrRunCount) {
		t.Fatalf("Measure with a counter that does not count: got %v, want ErrRunCount", err)
	}
}

func TestMeasureErrors(t *testing.T) {
	objs := loadXDP(t)
	l := &Loop{Prog: objs.Drop, Data: frame(t, 64), Runs: objs.Runs}
	if _, err := l.Measure(shortRepeat); err == nil {
		t.Error("Measure(shortRepeat) succeeded; the slope needs a longer loop")
	}
	boom := errors.New("boom")
	l.Prepare = func() error { return boom }
	if _, err := l.Measure(1000); !errors.Is(err, boom) {
		t.Errorf("Measure with a failing Prepare: got %v, want it wrapped", err)
	}
	l.Prepare = nil
	// More than a page plus MAX_SKB_FRAGS fragments: every kernel refuses
	// it (EMSGSIZE before 5.18, ENOMEM since XDP test_run takes
	// fragments). A frame shorter than an Ethernet header would not do:
	// kernels before 5.18 run XDP programs on it.
	l.Data = make([]byte, 1<<20)
	if _, err := l.Measure(1000); err == nil {
		t.Error("Measure on a 1 MiB packet succeeded; the kernel should refuse it")
	}
}

func TestPinnedRestoresAffinity(t *testing.T) {
	var before, during, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	err := Pinned(0, func() error { return unix.SchedGetaffinity(0, &during) })
	if err != nil {
		t.Fatal(err)
	}
	if during.Count() != 1 || !during.IsSet(0) {
		t.Errorf("inside Pinned(0) the thread may run on %d CPUs", during.Count())
	}
	// The goroutine may now be on any thread; all of them should have
	// the process's original mask again.
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("affinity after Pinned = %v, want %v", after, before)
	}
}

func TestRepeatFor(t *testing.T) {
	for _, tc := range []struct {
		n    int
		ns   float64
		call time.Duration
		want uint32
	}{
		{n: 1, ns: 5, call: 4 * time.Millisecond, want: 100_000},       // never too short
		{n: 1e9, ns: 5, call: 4 * time.Millisecond, want: 800_000},     // fill the call time
		{n: 500_000, ns: 5, call: 4 * time.Millisecond, want: 500_000}, // no more than asked
		{n: 1e12, ns: 0, call: time.Second, want: 1 << 26},             // capped
		{n: 1e9, ns: 1000, call: 4 * time.Millisecond, want: 100_000},  // slow programs
	} {
		if got := repeatFor(tc.n, tc.ns, tc.call); got != tc.want {
			t.Errorf("repeatFor(%d, %v, %v) = %d, want %d", tc.n, tc.ns, tc.call, got, tc.want)
		}
	}
}

func TestMeanCI95(t *testing.T) {
	m, half := meanCI95([]float64{1, 2, 3, 4, 5})
	// mean 3, sd sqrt(2.5), t(4, 0.975) = 2.7764
	if m != 3 || math.Abs(half-2.7764*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-3 {
		t.Errorf("meanCI95 = %v ± %v, want 3 ± 1.963", m, half)
	}
	if _, half := meanCI95([]float64{7}); !math.IsInf(half, 1) {
		t.Errorf("one sample: half-width %v, want +Inf", half)
	}
}

func TestCheckKernel(t *testing.T) {
	for _, tc := range []struct {
		ns, kernel float64
		ok         bool
	}{
		{5.7, 5, true},
		{5.0, 5, true},
		{4.9, 5, true}, // noise below the truncated value
		{14.5, 14, true},
		{9.0, 5, false}, // we measured more than the kernel's loop
		{2.0, 5, false},
		{420, 5, false}, // a fixed cost leaked into ns/op
	} {
		err := Result{Ns: tc.ns, KernelNs: tc.kernel}.checkKernel()
		if (err == nil) != tc.ok {
			t.Errorf("checkKernel(ns=%v, kernel=%v) = %v, want ok=%v", tc.ns, tc.kernel, err, tc.ok)
		}
	}
}

func TestUDPFrame(t *testing.T) {
	for _, size := range []int{42, 64, 1500, 9000} {
		f, err := UDPFrame(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(f) != size {
			t.Errorf("UDPFrame(%d) is %d bytes", size, len(f))
		}
		if ipChecksum(f[14:34]) != 0 {
			t.Errorf("UDPFrame(%d): IPv4 header checksum does not verify", size)
		}
	}
	for _, size := range []int{0, 41, 9001} {
		if _, err := UDPFrame(size); err == nil {
			t.Errorf("UDPFrame(%d) succeeded", size)
		}
	}
}

func TestFixedCostIsRecentMedian(t *testing.T) {
	var l Loop
	for i, tc := range []struct{ short, want int64 }{
		{10, 10},
		{900, 900}, // of {10, 900} the upper middle
		{12, 12},
		{11, 12},
		{5000, 12}, // one slow call does not move it
	} {
		if got := l.fixedCost(tc.short); got != tc.want {
			t.Errorf("call %d: fixedCost(%d) = %d, want %d", i, tc.short, got, tc.want)
		}
	}
	for range 100 {
		l.fixedCost(7)
	}
	if got := l.fixedCost(7); got != 7 || len(l.recent) != 31 {
		t.Errorf("after many calls: median %d over %d, want 7 over 31", got, len(l.recent))
	}
}
