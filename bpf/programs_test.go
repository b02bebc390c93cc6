package bpf_test

import (
	"bytes"
	"testing"

	"bpfbench/bpf"
	"bpfbench/internal/child"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

func TestMain(m *testing.M) { child.RunTests(m, nil) }

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
		{"add64", objs.Add64, 1},
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

// TestCalibrationJIT checks what the instruction-count mode's calibration
// row relies on: add64 is drop plus 64 BPF additions, and the JIT turns
// each into exactly one machine instruction.
func TestCalibrationJIT(t *testing.T) {
	objs := testutil.LoadXDP(t)
	count := func(p *ebpf.Program) (bpfInsns, machine int) {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		insns, err := info.Instructions()
		if err != nil {
			t.Fatalf("%s: translated instructions: %v", info.Name, err)
		}
		n, err := bpf.JitedInstructions(p)
		if err != nil {
			t.Fatal(err)
		}
		return len(insns), n
	}
	dropBPF, dropJIT := count(objs.Drop)
	addBPF, addJIT := count(objs.Add64)
	if got := addBPF - dropBPF; got != 64 {
		t.Errorf("add64 has %d BPF instructions more than drop (%d vs %d), want 64", got, addBPF, dropBPF)
	}
	if got := addJIT - dropJIT; got != addBPF-dropBPF {
		t.Errorf("add64's JIT image has %d instructions more than drop's (%d vs %d), want %d: one per added BPF instruction",
			got, addJIT, dropJIT, addBPF-dropBPF)
	}
	t.Logf("drop: %d BPF, %d x86 instructions; add64: %d BPF, %d x86", dropBPF, dropJIT, addBPF, addJIT)
}

// TestJitedInstructionsEndbr covers the landing pad x86asm cannot decode,
// which the JIT of an IBT kernel (Debian 6.12 and later) puts first.
func TestJitedInstructionsEndbr(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x90}, true},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfb}, true},
		{[]byte{0xf3, 0x0f, 0x1e}, false},
		{[]byte{0x0f, 0x1f, 0x44, 0x00, 0x00}, false},
	} {
		if got := bpf.Endbr(c.b); got != c.want {
			t.Errorf("endbr(% x) = %v, want %v", c.b, got, c.want)
		}
	}
}
