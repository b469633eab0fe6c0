// Package ndpptest holds helpers shared by the tests of several packages:
// seeded diagonals for test models, planted baskets, contexts cancelled at
// a chosen check, the chi-square test of the samplers' exactness, and for
// the service's tests a buffer safe to share and a GET.
package ndpptest

import (
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/ndpp"
)

// DiagScales are the sizes of the diagonals the tests add to their models,
// δᵢ = scale·e^{N(0,1)}: from nearly low-rank (1e-8) to nearly diagonal (10).
var DiagScales = []float64{1e-8, 1e-4, 1e-2, 1, 10}

// DiagCase picks a diagonal for a test model from a seed: the scale
// DiagScales[seed mod 5], and a partial diagonal for every third seed.
func DiagCase(seed uint64) (scale float64, partial bool) {
	return DiagScales[seed%uint64(len(DiagScales))], seed%3 == 0
}

// WithDiag returns m with a seeded diagonal of the given scale added (V, B
// and C unchanged). With partial, about half of the items get δᵢ = 0, so
// that sets of those items keep the rank bound 2d and can be singular.
func WithDiag(m *ndpp.Model, scale float64, seed uint64, partial bool) (*ndpp.Model, error) {
	v, b, _, c := m.Rows()
	if m.Shared() {
		b = nil
	}
	rng := rand.New(rand.NewPCG(seed, 31))
	delta := make([]float64, m.N())
	for i := range delta {
		delta[i] = scale * math.Exp(rng.NormFloat64())
		if partial && rng.IntN(2) == 0 {
			delta[i] = 0
		}
	}
	return ndpp.NewFromRows(m.N(), m.D(), v, b, c, ndpp.WithDiag(delta))
}

// PlantedBaskets draws count baskets over n items in groups of four: one to
// three items of a group, and item 0 with a third of the baskets of the
// other groups. The same seed gives the same baskets.
func PlantedBaskets(n, count int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([][]int, count)
	for i := range out {
		g := rng.IntN(n / 4)
		k := 1 + rng.IntN(3)
		perm := rng.Perm(4)[:k]
		s := make([]int, 0, k+1)
		for _, x := range perm {
			s = append(s, 4*g+x)
		}
		if rng.IntN(3) == 0 && g != 0 {
			s = append(s, 0)
		}
		out[i] = s
	}
	return out
}
