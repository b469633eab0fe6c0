package exactnorm

import (
	"sync/atomic"

	"github.com/ndpp-go/ndpp/blas"
)

// gramUnits is the number of units a shared recomputation of G is split
// into: a goroutine that joins late still finds work.
const gramUnits = 4

// gramTask is a recomputation of the upper triangle of G = ZᵀZ split into
// units of groups of rows (blas.SyrkPart), each claimed by one goroutine
// (an atomic counter hands them out). The goroutine that finishes the last
// unit closes fin.
type gramTask struct {
	z      []float64
	k, m   int
	g      []float64
	bounds []int // unit u is groups bounds[u]…bounds[u+1]−1
	next   atomic.Int64
	left   atomic.Int64 // units not finished
	fin    chan struct{}
}

// newGramTask splits the recomputation of G from the k×m Z into units of
// about equal cost (a group's cost is its width).
func newGramTask(z []float64, k, m int, g []float64) *gramTask {
	t := &gramTask{z: z, k: k, m: m, g: g, fin: make(chan struct{})}
	groups := blas.SyrkGroups(m)
	width := func(gi int) int { return m - min(4*gi, m-4) }
	total := 0
	for gi := range groups {
		total += width(gi)
	}
	t.bounds = append(t.bounds, 0)
	acc := 0
	for gi := range groups {
		acc += width(gi)
		if len(t.bounds) < gramUnits && acc*gramUnits >= total*len(t.bounds) && gi+1 < groups {
			t.bounds = append(t.bounds, gi+1)
		}
	}
	t.bounds = append(t.bounds, groups)
	t.left.Store(int64(len(t.bounds) - 1))
	return t
}

// work claims and computes units until none is left, with y as scratch
// (grown as needed); it returns y and the number of units it computed.
func (t *gramTask) work(y []float64) ([]float64, int) {
	units := int64(len(t.bounds) - 1)
	for did := 0; ; did++ {
		u := t.next.Add(1) - 1
		if u >= units {
			return y, did
		}
		y = blas.SyrkPart(t.m, t.k, t.z, t.m, t.g, t.m, t.bounds[u], t.bounds[u+1], y)
		if t.left.Add(-1) == 0 {
			close(t.fin)
		}
	}
}
