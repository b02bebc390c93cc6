package bpf_test

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/internal/testutil"
)

func TestMain(m *testing.M) { host.RunTests(m) }

func TestXDPProgramsReturn(t *testing.T) {
	objs := testutil.LoadXDP(t)
	in := testutil.Frame(t, 64)
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
		if tc.name == "touch" && (!bytes.Equal(out[0:6], bpf.SrcMAC[:]) || !bytes.Equal(out[6:12], bpf.DstMAC[:])) {
			t.Errorf("touch did not swap MAC addresses: got % x", out[:12])
		}
	}
}

func TestParseCountsProtocols(t *testing.T) {
	objs := testutil.LoadXDP(t)
	if _, _, err := objs.Parse.Test(testutil.Frame(t, 1500)); err != nil {
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
