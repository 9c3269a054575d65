//go:build !linux

package embedded

import "os"

// syncData makes f's data durable; where fdatasync is missing, with fsync.
func syncData(f *os.File) error { return f.Sync() }
