// Package fsutil holds the file system steps that durability needs beyond
// the standard library's.
package fsutil

import (
	"fmt"
	"os"
)

// SyncDir fsyncs the directory dir, so that the files created, renamed or
// removed in it stay so after a crash: fsyncing a file makes its data
// durable, not its name.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
