package chtest

import "syscall"

// dieWithParent makes the kernel kill the server when the test binary dies
// (a test timeout's panic, a kill), so no server outlives its tests.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
