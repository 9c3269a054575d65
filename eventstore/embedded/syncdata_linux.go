package embedded

import (
	"os"
	"syscall"
)

// syncData makes f's data durable, and its size, without the rest of its
// metadata (fdatasync).
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
