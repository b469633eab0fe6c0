//go:build !linux

package learn

import "runtime"

// osYield yields to other goroutines (without an operating-system yield).
func osYield() { runtime.Gosched() }
