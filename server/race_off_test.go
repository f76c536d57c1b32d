//go:build !race

package server

// raceDetector tells the tests they run under the race detector.
const raceDetector = false
