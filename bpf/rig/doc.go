// Package rig builds the states the families measure in: the dispatcher
// holder that keeps the measured program in the XDP dispatcher, the
// fillers that occupy it, and the veth traffic rig that sends real frames
// through an attached program (generator, receivers, counters).
package rig
