//go:build race

package domain_test

// raceEnabled skips heap measurements, which the race detector inflates.
const raceEnabled = true
