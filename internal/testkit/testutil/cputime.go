package testutil

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time, user and system, the process has used so far.
// Benchmarks report it per operation: other load on the machine disturbs it
// less than wall time.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
}
