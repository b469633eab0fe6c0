//go:build !amd64

package learn

const hasPrefetchW = false

func prefetchLines(p *float64, lines int, write bool) {}
