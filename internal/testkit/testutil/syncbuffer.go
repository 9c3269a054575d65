// Package testutil holds small helpers shared by tests of several packages.
package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is an io.Writer safe for concurrent writers, for capturing the
// logs of a server's goroutines in tests.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
