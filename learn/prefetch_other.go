//go:build !amd64

package learn

const hasPrefetchW = false

func prefetchRead(p *float64, lines int)  {}
func prefetchWrite(p *float64, lines int) {}
