//go:build race

package rerank

// raceEnabled skips the timing tests under the race detector.
const raceEnabled = true
