//go:build !noasm

package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAsmGjElim compares gjElimAVX2 bit for bit with its Go twin on seeded
// random k×k matrices (padded strides, every pivot column, the matrix
// ending at an inaccessible page), with zeros (of both signs) and NaNs in
// the pivot column: rows whose multiplier is zero are left as they are,
// NaN multipliers are not (a NaN is any NaN: its sign and payload depend
// on the order of the operands).
func TestAsmGjElim(t *testing.T) {
	requireAsm(t)
	rng := rand.New(rand.NewPCG(5, 9))
	for _, k := range append(seq(1, 23), 31, 40) {
		for _, pad := range []int{0, 3} {
			lda := k + pad
			for c := range k {
				a := randSlice(rng, (k-1)*lda+k)
				for r := range k {
					switch rng.IntN(6) {
					case 0:
						a[r*lda+c] = 0
					case 1:
						a[r*lda+c] = math.Copysign(0, -1)
					case 2:
						if rng.IntN(4) == 0 {
							a[r*lda+c] = math.NaN()
						}
					}
				}
				g := guardedCopy(t, a)
				gjElimAVX2(&g[0], lda, k, c)
				gjElimGo(a, k, lda, c)
				for i := range a {
					if math.Float64bits(g[i]) != math.Float64bits(a[i]) && !(math.IsNaN(g[i]) && math.IsNaN(a[i])) {
						t.Fatalf("k=%d lda=%d c=%d: entry %d = %v, Go twin %v", k, lda, c, i, g[i], a[i])
					}
				}
			}
		}
	}
}
