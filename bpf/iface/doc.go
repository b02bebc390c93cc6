// Package iface measures XDP on a real device the user names: it refuses
// the default-route or management device unless told otherwise, attaches
// and detaches, and samples the device's counters and the CPUs' softirq
// time while external traffic arrives.
package iface
