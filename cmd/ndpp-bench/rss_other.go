//go:build !linux && !darwin

package main

// peakRSS reports that the platform's peak resident set size is not read.
func peakRSS() (bytes int64, ok bool) { return 0, false }
