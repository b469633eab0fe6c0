//go:build race

package main

// raceEnabled shortens the slowest tests under the race detector.
const raceEnabled = true
