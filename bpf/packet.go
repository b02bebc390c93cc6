package bpf

import (
	"encoding/binary"
	"fmt"
)

// LiveFramesBatch is the batch of a live-frames test_run
// (BPF_F_TEST_XDP_LIVE_FRAMES): frames made, run and flushed with bottom
// halves off before the receive softirq gets the CPU. 64 is the kernel's
// default and NAPI's weight.
const LiveFramesBatch = 64

// Addresses of the frames the suite builds. They are only ever used as
// test_run input or inside the suite's own network namespaces.
var (
	SrcMAC = [6]byte{0x02, 0xbb, 0xfb, 0x00, 0x00, 0x01}
	DstMAC = [6]byte{0x02, 0xbb, 0xfb, 0x00, 0x00, 0x02}
	SrcIP  = [4]byte{198, 18, 0, 1} // RFC 2544 benchmarking range
	DstIP  = [4]byte{198, 18, 0, 2}
)

// UDPFrame returns an Ethernet/IPv4/UDP frame of size bytes (without FCS),
// the kind xdp_rxq_info and pktgen send: 64 is the minimum Ethernet frame,
// 1500 a full MTU-sized one.
func UDPFrame(size int) ([]byte, error) {
	const eth, ip, udp = 14, 20, 8
	if size < eth+ip+udp || size > 9000 {
		return nil, fmt.Errorf("frame size %d: want %d to 9000 bytes", size, eth+ip+udp)
	}
	f := make([]byte, size)
	copy(f[0:6], DstMAC[:])
	copy(f[6:12], SrcMAC[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)

	h := f[eth : eth+ip]
	h[0] = 0x45 // version 4, 5 words
	binary.BigEndian.PutUint16(h[2:], uint16(size-eth))
	h[8] = 64 // TTL
	h[9] = 17 // UDP
	copy(h[12:16], SrcIP[:])
	copy(h[16:20], DstIP[:])
	binary.BigEndian.PutUint16(h[10:], ipChecksum(h))

	u := f[eth+ip:]
	binary.BigEndian.PutUint16(u[0:], 9) // discard
	binary.BigEndian.PutUint16(u[2:], 9) // discard
	binary.BigEndian.PutUint16(u[4:], uint16(size-eth-ip))
	return f, nil
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
