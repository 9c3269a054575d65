//go:build race

package simulate

// raceDetector tells that the tests run with the race detector.
const raceDetector = true
