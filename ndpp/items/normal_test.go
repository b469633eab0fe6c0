package items

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNormalsMatchNormFloat64 draws long runs of normals from several
// seeds, through norm, skip, fill and fillPair, and checks every value's
// bits and the generator's position against math/rand/v2's NormFloat64
// over a rand.PCG of the same seed (the rare paths included: about 3% of
// the draws).
func TestNormalsMatchNormFloat64(t *testing.T) {
	draws := 2_000_000
	if testing.Short() {
		draws = 200_000
	}
	const scale = 0.3
	for _, seed := range [][2]uint64{{1, 0x9e3779b97f4a7c15}, {2, 3}, {0, 0}, {math.MaxUint64, 7}} {
		pcg := rand.NewPCG(seed[0], seed[1])
		ref := rand.New(pcg)
		s := newNormals(seed[0], seed[1])
		r := rand.New(&s)
		for d := 0; d < draws; d++ {
			switch d % 4 {
			case 0:
				if want, got := ref.NormFloat64(), s.norm(r); math.Float64bits(want) != math.Float64bits(got) {
					t.Fatalf("seed %v draw %d: %v, NormFloat64 gives %v", seed, d, got, want)
				}
			case 1:
				ref.NormFloat64()
				s.skip(1, r)
			case 2: // fill: rows of 3, the first 2 drawn
				rows := make([]float64, 3*5)
				s.fill(rows, 2, 3, scale, r)
				for q := range 5 {
					for c := range 2 {
						require.Equal(t, math.Float64bits(ref.NormFloat64()*scale), math.Float64bits(rows[3*q+c]), "seed %v draw %d: fill", seed, d)
					}
					require.Zero(t, rows[3*q+2])
				}
				d += 9
			case 3: // fillPair: a second generator at another position
				b := newNormals(seed[0]^5, seed[1])
				refB := rand.New(rand.NewPCG(seed[0]^5, seed[1]))
				rows := make([]float64, 5*7)
				fillPair(&s, &b, rows, 2, 5, scale, r, rand.New(&b))
				for q := range 7 {
					for c := range 2 {
						require.Equal(t, math.Float64bits(ref.NormFloat64()*scale), math.Float64bits(rows[5*q+c]), "seed %v draw %d: fillPair a", seed, d)
						require.Equal(t, math.Float64bits(refB.NormFloat64()*scale), math.Float64bits(rows[5*q+2+c]), "seed %v draw %d: fillPair b", seed, d)
					}
					require.Zero(t, rows[5*q+4])
				}
				require.Equal(t, refB.Uint64(), b.Uint64(), "seed %v: fillPair's b position", seed)
				d += 13
			}
		}
		s.skip(1000, r)
		for range 1000 {
			ref.NormFloat64()
		}
		require.Equal(t, pcg.Uint64(), s.Uint64(), "seed %v: the generators' positions", seed)
	}
}
