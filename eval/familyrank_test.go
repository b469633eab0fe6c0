package eval

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// skewCooccurrenceKernel builds the kernel of docs/math.md ("Kernels of
// the family that rank like co-occurrence"): L = I + εA with
// A_jy = ±√cos(j, y) for the cosine of the training baskets' incidence
// vectors, antisymmetric random signs: V = 0, B = I, C = εA (d = n).
func skewCooccurrenceKernel(t *testing.T, train [][]int, n int, eps float64, seed uint64) *ndpp.Model {
	t.Helper()
	cnt := make([]float64, n)
	co := make([]float64, n*n)
	for _, s := range train {
		for _, a := range s {
			cnt[a]++
			for _, b := range s {
				if a != b {
					co[a*n+b]++
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	c := make([]float64, n*n)
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if co[a*n+b] == 0 {
				continue
			}
			x := eps * math.Sqrt(co[a*n+b]/math.Sqrt(cnt[a]*cnt[b]))
			if rng.IntN(2) == 0 {
				x = -x
			}
			c[a*n+b], c[b*n+a] = x, -x
		}
	}
	b := make([]float64, n*n)
	diag := make([]float64, n)
	for i := range n {
		b[i*n+i] = 1
		diag[i] = 1
	}
	m, err := ndpp.NewFromRows(n, n, make([]float64, n*n), b, c, ndpp.WithDiag(diag))
	require.NoError(t, err)
	return m
}

// TestSkewCooccurrenceKernelRanksLikeCooccurrence: a kernel of the family
// (d = n, built from the co-occurrence cosines, no training) ranks the held
// out items of the apparel registries as the co-occurrence baseline does,
// far above popularity: the conditional-gain bound of docs/math.md caps
// the size of gains, not their order.
func TestSkewCooccurrenceKernelRanksLikeCooccurrence(t *testing.T) {
	data, err := baskets.ReadFile(filepath.Join("..", "testdata", "1_100_100_100_apparel_regs.csv"), baskets.LineOptions{Base: 1, N: 100})
	require.NoError(t, err)
	train, _, test, err := baskets.HoldOutSlice(data, 300, 2000, 1)
	require.NoError(t, err)
	ctx := context.Background()
	opt := Options{Seed: 1}
	co, err := CooccurrenceBaseline(ctx, train, test, 100, opt)
	require.NoError(t, err)
	pop, err := IndependentBaseline(ctx, train, test, 100, opt)
	require.NoError(t, err)
	m := skewCooccurrenceKernel(t, train, 100, 1, 7)
	got, err := Evaluate(ctx, m, test, opt)
	require.NoError(t, err)
	t.Logf("paper MPR: kernel %.2f, co-occurrence %.2f, popularity %.2f", got.MPR, co.MPR, pop.MPR)
	require.InDelta(t, co.MPR, got.MPR, 1)
	require.Greater(t, got.MPR, pop.MPR+10)
}
