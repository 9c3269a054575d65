//go:build !linux

package chtest

import "syscall"

// dieWithParent has no portable equivalent outside Linux; Main and the
// tests' cleanups stop the servers they start.
func dieWithParent() *syscall.SysProcAttr { return nil }
