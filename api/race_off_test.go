//go:build !race

package api

// raceDetector says whether the tests run under the race detector.
const raceDetector = false
