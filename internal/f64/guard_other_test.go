//go:build !unix && amd64 && !noasm

package f64

import "testing"

// guarded returns a slice of n float64 (no guard page on this system).
func guarded(t *testing.T, n int) []float64 { return make([]float64, n) }
