package items

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNormalsMatchNormFloat64 draws long runs of normals from several
// seeds, through norm and through skip, and checks every value's bits and
// the generator's position against math/rand/v2's NormFloat64 over a
// rand.PCG of the same seed (the rare paths included: about 1% of the
// draws).
func TestNormalsMatchNormFloat64(t *testing.T) {
	draws := 2_000_000
	if testing.Short() {
		draws = 200_000
	}
	for _, seed := range [][2]uint64{{1, 0x9e3779b97f4a7c15}, {2, 3}, {0, 0}, {math.MaxUint64, 7}} {
		pcg := rand.NewPCG(seed[0], seed[1])
		ref := rand.New(pcg)
		s := newNormals(seed[0], seed[1])
		r := rand.New(&s)
		for d := range draws {
			if d%3 == 2 {
				ref.NormFloat64()
				s.skip(1, r)
				continue
			}
			if want, got := ref.NormFloat64(), s.norm(r); math.Float64bits(want) != math.Float64bits(got) {
				t.Fatalf("seed %v draw %d: %v, NormFloat64 gives %v", seed, d, got, want)
			}
		}
		s.skip(1000, r)
		for range 1000 {
			ref.NormFloat64()
		}
		require.Equal(t, pcg.Uint64(), s.Uint64(), "seed %v: the generators' positions", seed)
	}
}
