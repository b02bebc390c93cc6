// Package host owns what the suite changes on the machine and undoes: the
// journal of sysctl changes and their restore (on exit, on a signal, or by
// the next run after a kill), network namespaces and the veth devices in
// them, and the repair of what a dead run left. Its subpackages own no
// such state: syslock is the system-wide lock that keeps one run at a
// time, proc tells a live run from a dead one, tracefs mounts tracefs
// only where a thread can see it, snapshot takes what the safety tests
// compare.
package host
