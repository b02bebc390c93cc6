// Package host owns what the suite changes on the machine and undoes: the
// journal of sysctl changes and their restore (on exit, on a signal, or by
// the next run after a kill), network namespaces and the veth devices in
// them, tracefs where nothing mounted it, the system-wide lock that keeps one run at a time, the repair of
// what a dead run left, and the snapshots the safety tests compare.
package host
