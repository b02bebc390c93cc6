package syslock

// LockAt and LockPath let the external tests lock a file of their own, and
// read the system-wide one, without a package of them importing host,
// which imports syslock.
var (
	LockAt   = lockAt
	LockPath = lockPath
	SelfPID  = selfPID
)
