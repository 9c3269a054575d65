//go:build !linux

package loadtest

import "errors"

// allowedCPUs refuses: placing processes on CPUs goes through Linux's
// affinity (taskset).
func allowedCPUs() ([]int, error) {
	return nil, errors.New("loadtest: placing processes on CPUs needs Linux (taskset)")
}
