package bpf

import "testing"

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
