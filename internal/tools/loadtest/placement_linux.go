package loadtest

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// allowedCPUs are the CPUs this process may run on (its affinity), which
// the processes it starts may be placed on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("loadtest: the CPUs this process may use: %w", err)
	}
	var cpus []int
	for c := range maxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
