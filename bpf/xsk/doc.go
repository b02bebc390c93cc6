// Package xsk opens AF_XDP sockets on the traffic rig's devices (UMEM,
// fill, completion, RX and TX rings) and serves them from a thread on
// another CPU: drop what arrives, or forward it back out (l2fwd).
package xsk
