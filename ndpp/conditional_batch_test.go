package ndpp

import (
	"math"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
)

// TestConditionalGainsBatchMatchesSingle: every set of a batch gets the
// gains (and the error) of ConditionalGains on its own. The catalogues are
// larger than one block of items and the batches larger than one group of
// stacked items, and the sets include empty, singular, invalid and large
// ones (beyond 2d with a diagonal).
func TestConditionalGainsBatchMatchesSingle(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		d := 2 + rng.IntN(6)
		n := []int{40, gainsCols + 77, 2*gainsCols + 1}[seed%3]
		diag := 0.0
		if seed%2 == 0 {
			diag = 0.1
		}
		m := Random(n, d, seed, RandomOptions{Shared: seed%5 == 0, Diag: diag})
		ys := randomSets(rng, n, 60+rng.IntN(60), 1+min(m.MaxRank(), 2*d)/2)
		ys = append(ys, nil, []int{})
		if diag > 0 {
			ys = append(ys, distinctItems(rng, n, min(n, 3*d+5))) // beyond 2d
		} else {
			ys = append(ys, distinctItems(rng, n, m.MaxRank()+1)) // singular
		}
		ys = append(ys, []int{1, 1}, []int{n}) // invalid
		big := distinctItems(rng, n, min(n, gainsRows+9))
		if seed%4 == 0 {
			ys = append(ys, big) // a group of its own
		}
		dst := make([][]float64, len(ys))
		for b := range dst {
			dst[b] = make([]float64, n+b%3) // longer outputs are allowed
		}
		errs := make([]error, len(ys))
		require.NoError(t, m.ConditionalGainsBatch(ys, dst, errs))
		want := make([]float64, n)
		singular := 0
		for b, y := range ys {
			err := m.ConditionalGains(y, want)
			if err != nil {
				require.Error(t, errs[b], "seed %d set %d", seed, b)
				require.Equal(t, err.Error(), errs[b].Error(), "seed %d set %d", seed, b)
				if err == ErrSingularCondition {
					singular++
				}
				continue
			}
			require.NoError(t, errs[b], "seed %d set %d", seed, b)
			for j := range want {
				if math.Abs(want[j]-dst[b][j]) > gainTol*math.Max(1, math.Abs(want[j])) {
					t.Fatalf("seed %d set %d item %d: batch %v, single %v", seed, b, j, dst[b][j], want[j])
				}
			}
		}
		if diag == 0 {
			require.Positive(t, singular, "seed %d: no singular set exercised", seed)
		}
	}
}

func TestConditionalGainsBatchShapes(t *testing.T) {
	m := Random(10, 2, 1, RandomOptions{})
	ys := [][]int{{1}, {2}}
	require.ErrorContains(t, m.ConditionalGainsBatch(ys, make([][]float64, 1), make([]error, 2)), "2 sets, 1 outputs")
	require.ErrorContains(t, m.ConditionalGainsBatch(ys, [][]float64{make([]float64, 10), make([]float64, 9)}, make([]error, 2)), "length 10, got 9 for set 1")
	require.NoError(t, m.ConditionalGainsBatch(nil, nil, nil))
}

// benchSets draws count baskets of mean size about 8 over n items.
func benchSets(n, count int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 3))
	ys := make([][]int, count)
	for i := range ys {
		k := 1
		for k < 30 && rng.Float64() >= 1.0/8 {
			k++
		}
		ys[i] = distinctItems(rng, n, k)
	}
	return ys
}

// BenchmarkConditionalGains compares next-item gains for 256 baskets at
// n = 10⁴, d = 30: one ConditionalGains call per basket ("single"),
// ConditionalGainsBatch on all of them ("batch"), and the two products of
// every basket's items with the item matrices alone ("gemm-bound", what the
// gains cannot beat). Metric: baskets/s.
func BenchmarkConditionalGains(b *testing.B) {
	const n, d, count = 10000, 30, 256
	m := Random(n, d, 1, RandomOptions{Diag: 0.05})
	ys := benchSets(n, count, 2)
	dst := make([][]float64, count)
	for i := range dst {
		dst[i] = make([]float64, n)
	}
	errs := make([]error, count)
	report := func(b *testing.B) {
		b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "baskets/s")
	}
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, y := range ys {
				if err := m.ConditionalGains(y, dst[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := m.ConditionalGainsBatch(ys, dst, errs); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("gemm-bound", func(b *testing.B) {
		// Per basket: (k×d)·(d×n) twice, as ConditionalGains does.
		vy := make([]float64, 64*d)
		out := make([]float64, 64*n)
		vRows, bRows, _, _ := m.Rows()
		b.ReportAllocs()
		for b.Loop() {
			for _, y := range ys {
				k := len(y)
				blas.Gemm(gblas.NoTrans, gblas.Trans, k, n, d, 1, vy, d, vRows, d, 0, out, n)
				blas.Gemm(gblas.NoTrans, gblas.Trans, k, n, d, 1, vy, d, bRows, d, 0, out, n)
			}
		}
		report(b)
	})
}

// distinctItems draws k distinct items of n.
func distinctItems(rng *rand.Rand, n, k int) []int {
	return rng.Perm(n)[:k]
}

// randomSets draws count sets of 1..maxK distinct items of n.
func randomSets(rng *rand.Rand, n, count, maxK int) [][]int {
	ys := make([][]int, count)
	for i := range ys {
		ys[i] = distinctItems(rng, n, 1+rng.IntN(maxK))
	}
	return ys
}
