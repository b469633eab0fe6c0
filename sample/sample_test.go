package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Tolerances.
const (
	kernelTol = 1e-10 // the low-rank K against a dense inverse (absolute, |K_ij| ≲ 1)
	pivotTol  = 1e-9  // pivots of the sampler against the dense sequential sampler
)

// denseL returns the n×n kernel of m.
func denseL(m *ndpp.Model) *mat.Dense {
	n := m.N()
	data := make([]float64, n*n)
	m.KernelInto(data, seq(n))
	return mat.NewDense(n, n, data)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// denseK returns K = I − (I + L)⁻¹.
func denseK(m *ndpp.Model) *mat.Dense {
	n := m.N()
	a := mat.DenseCopyOf(denseL(m))
	for i := 0; i < n; i++ {
		a.Set(i, i, a.At(i, i)+1)
	}
	var inv mat.Dense
	if err := inv.Inverse(a); err != nil {
		panic(err)
	}
	k := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := -inv.At(i, j)
			if i == j {
				v++
			}
			k.Set(i, j, v)
		}
	}
	return k
}

// testModel is a seeded model of one of the kinds the sampler must handle.
type testModel struct {
	name string
	m    *ndpp.Model
}

func testModels(n int, seed uint64) []testModel {
	return []testModel{
		{"general d=3", ndpp.Random(n, 3, seed, ndpp.RandomOptions{})},
		{"diag d=3", ndpp.Random(n, 3, seed, ndpp.RandomOptions{Diag: 0.3})},
		{"shared d=4", ndpp.Random(n, 4, seed, ndpp.RandomOptions{Shared: true})},
		{"shared diag d=2", ndpp.Random(n, 2, seed, ndpp.RandomOptions{Shared: true, Diag: 0.5})},
		{"block-diagonal C, odd d=3 (singular C), diag", ndpp.Random(n, 3, seed, ndpp.RandomOptions{BlockDiagonal: true, Diag: 0.1})},
	}
}

// TestMarginalKernel: the low-rank form κᵢ[i = j] + ẑᵢᵀXẑⱼ is the dense
// K = I − (I + L)⁻¹, and ExpectedSize is tr K = tr(L(L + I)⁻¹).
func TestMarginalKernel(t *testing.T) {
	for _, tm := range testModels(40, 3) {
		m := tm.m
		s, err := New(context.Background(), m, Options{})
		require.NoError(t, err)
		k := denseK(m)
		zi, zj := make([]float64, s.r), make([]float64, s.r)
		xz := make([]float64, s.r)
		worst := 0.0
		for i := 0; i < m.N(); i++ {
			s.zhat(i, zi)
			for a := range xz {
				xz[a] = 0
			}
			for j := 0; j < m.N(); j++ {
				s.zhat(j, zj)
				v := 0.0
				for a := 0; a < s.r; a++ {
					for b := 0; b < s.r; b++ {
						v += zi[a] * s.x0[a*s.r+b] * zj[b]
					}
				}
				if i == j {
					v += s.kappaOf(i)
				}
				worst = max(worst, math.Abs(v-k.At(i, j)))
			}
		}
		require.Less(t, worst, kernelTol, "%s: max |K_low-rank − K_dense|", tm.name)
		require.InDelta(t, mat.Trace(k), s.ExpectedSize(), 1e-9, "%s: expected size", tm.name)
	}
}

// denseSample is the dense sequential sampler (Poulson's, O(n³)) on the
// marginal kernel k: the given items are taken first, forced in, then the
// others in order with one draw each; it returns the sample (sorted) and
// the pivots pᵢ of the items not given, in order.
func denseSample(k *mat.Dense, given []int, rng *rand.Rand) ([]int, []float64) {
	n, _ := k.Dims()
	a := mat.DenseCopyOf(k).RawMatrix().Data // row-major n×n
	order := slices.Clone(given)
	isGiven := map[int]bool{}
	for _, g := range given {
		isGiven[g] = true
	}
	for i := 0; i < n; i++ {
		if !isGiven[i] {
			order = append(order, i)
		}
	}
	var out []int
	var pivots []float64
	for pos, i := range order {
		p := a[i*n+i]
		pi := p
		if isGiven[i] {
			out = append(out, i)
		} else {
			pivots = append(pivots, p)
			if rng.Float64() < p {
				out = append(out, i)
			} else {
				pi = p - 1
			}
		}
		rest := order[pos+1:]
		rowI := a[i*n : (i+1)*n]
		for _, j := range rest {
			f := a[j*n+i] / pi
			rowJ := a[j*n : (j+1)*n]
			for _, l := range rest {
				rowJ[l] -= f * rowI[l]
			}
		}
	}
	slices.Sort(out)
	return out, pivots
}

// TestAgainstDenseSampler: with the same random numbers, the sampler (one
// item at a time and in blocks of several sizes, with and without
// conditioning) draws the samples of the dense sequential sampler, so its
// conditional probabilities are the dense ones at every step (n = 150,
// across block boundaries).
func TestAgainstDenseSampler(t *testing.T) {
	const n, samples = 150, 12
	for _, tm := range testModels(n, 7) {
		m := tm.m
		k := denseK(m)
		for _, given := range [][]int{nil, {3}, {140, 17, 64}} {
			ref, err := New(context.Background(), m, Options{Block: 1})
			require.NoError(t, err)
			if given != nil {
				ref, err = ref.Given(context.Background(), given)
				require.NoError(t, err, "%s given %v", tm.name, given)
				var ka mat.Dense
				ka.CloneFrom(subMatrix(k, given))
				require.InDelta(t, math.Log(mat.Det(&ka)), ref.GivenLogProb(), 1e-9, "%s: log P(A ⊆ Y)", tm.name)
			}
			var want [][]int
			for i := uint64(0); i < samples; i++ {
				w, _ := denseSample(k, slices.Sorted(slices.Values(given)), rand.New(rand.NewPCG(i, 1)))
				want = append(want, w)
			}
			for _, block := range []int{1, 2, 7, 32, 200} {
				s, err := New(context.Background(), m, Options{Block: block})
				require.NoError(t, err)
				if given != nil {
					s, err = s.Given(context.Background(), given)
					require.NoError(t, err)
				}
				for i := uint64(0); i < samples; i++ {
					got := draw(t, s, rand.New(rand.NewPCG(i, 1)))
					require.Equal(t, want[i], got, "%s block %d given %v sample %d", tm.name, block, given, i)
				}
			}
		}
	}
}

// TestPivots compares the sampler's conditional probabilities with the
// dense ones along one sample (one item at a time, so that they can be
// read off), n = 150.
func TestPivots(t *testing.T) {
	for _, tm := range testModels(150, 11) {
		m := tm.m
		s, err := New(context.Background(), m, Options{Block: 1})
		require.NoError(t, err)
		_, want := denseSample(denseK(m), nil, rand.New(rand.NewPCG(5, 5)))
		rng := rand.New(rand.NewPCG(5, 5))
		copy(s.x, s.x0)
		worst := 0.0
		for i := 0; i < m.N(); i++ {
			s.zhat(i, s.zv)
			p := s.pivot(s.x, s.kappaOf(i))
			worst = max(worst, math.Abs(p-want[i]))
			pi := p
			if rng.Float64() >= p {
				pi = p - 1
			}
			s.update(s.x, pi)
		}
		require.Less(t, worst, pivotTol, "%s: max |p_sampler − p_dense|", tm.name)
	}
}

func subMatrix(k *mat.Dense, items []int) *mat.Dense {
	out := mat.NewDense(len(items), len(items), nil)
	for a, i := range items {
		for b, j := range items {
			out.Set(a, b, k.At(i, j))
		}
	}
	return out
}

// subsetProbs returns det L_Y for every subset Y of the n items (bit i of
// the index = item i), by dense determinants, and their sum, which must be
// det(I + L).
func subsetDets(t *testing.T, m *ndpp.Model) ([]float64, float64) {
	n := m.N()
	l := denseL(m)
	dets := make([]float64, 1<<n)
	sum := 0.0
	for mask := range dets {
		items := maskItems(mask, n)
		v := 1.0
		if len(items) > 0 {
			v = max(0, mat.Det(subMatrix(l, items)))
		}
		dets[mask] = v
		sum += v
	}
	a := mat.DenseCopyOf(l)
	for i := 0; i < n; i++ {
		a.Set(i, i, a.At(i, i)+1)
	}
	require.InDelta(t, 1, sum/mat.Det(a), 1e-9, "Σ_Y det L_Y = det(I + L)")
	return dets, sum
}

// maskItems returns the items of the subset mask of n items, in order.
func maskItems(mask, n int) []int {
	var items []int
	for i := range n {
		if mask&(1<<i) != 0 {
			items = append(items, i)
		}
	}
	return items
}

// minP is the p-value below which the chi-square tests fail: at a fixed
// seed the statistic is deterministic, and a correct sampler passes a
// 0.1% test with probability 0.999 at any seed.
const minP = 1e-3

// TestChiSquare: on n = 10 items, the frequency of every subset over 10⁵
// samples matches det L_Y / det(I + L) (Pearson's chi-square at a fixed
// seed), the mean size matches tr(L(L + I)⁻¹), and conditioned on given
// items, the frequencies and mean size match the conditional law
// det L_Y / Σ_{Y' ⊇ A} det L_{Y'}; with and without a diagonal.
func TestChiSquare(t *testing.T) {
	const n, samples = 10, 100000
	for mi, tm := range testModels(n, 21) {
		m := tm.m
		dets, _ := subsetDets(t, m)
		for _, given := range [][]int{nil, {2}, {7, 4}} {
			s, err := New(context.Background(), m, Options{})
			require.NoError(t, err)
			if given != nil {
				s, err = s.Given(context.Background(), given)
				if errors.Is(err, ErrZeroProb) && len(given) > m.MaxRank() {
					continue
				}
				require.NoError(t, err, "%s given %v", tm.name, given)
			}
			var gmask int
			for _, g := range given {
				gmask |= 1 << g
			}
			probs := make([]float64, len(dets))
			z := 0.0
			for mask, v := range dets {
				if mask&gmask == gmask {
					probs[mask] = v
					z += v
				}
			}
			var mean, meanSq float64
			for mask := range probs {
				probs[mask] /= z
				c := float64(popcount(mask))
				mean += probs[mask] * c
				meanSq += probs[mask] * c * c
			}
			sd := math.Sqrt(meanSq - mean*mean)
			require.InDelta(t, mean, s.ExpectedSize(), 1e-9, "%s given %v: ExpectedSize against enumeration", tm.name, given)

			counts := make([]int, len(dets))
			rng := rand.New(rand.NewPCG(uint64(100+mi), uint64(len(given))))
			var buf []int
			sizeSum := 0
			for i := 0; i < samples; i++ {
				buf = drawInto(t, s, rng, buf)
				mask := 0
				for _, it := range buf {
					mask |= 1 << it
				}
				counts[mask]++
				sizeSum += len(buf)
			}
			stat, df, p := ndpptest.ChiSquare(counts, probs, samples)
			emp := float64(sizeSum) / samples
			z2 := (emp - mean) / (sd / math.Sqrt(samples))
			t.Logf("%-44s given %-6v chi-square %8.2f, df %4d, p = %.3f; mean size %.4f, expected %.4f (z = %+.2f)",
				tm.name, given, stat, df, p, emp, mean, z2)
			require.Greater(t, p, minP, "%s given %v: chi-square %.2f with %d df", tm.name, given, stat, df)
			require.Less(t, math.Abs(z2), 4.0, "%s given %v: mean size %.4f, expected %.4f", tm.name, given, emp, mean)
			for i := range counts {
				if probs[i] == 0 {
					require.Zero(t, counts[i], "%s given %v: a subset of probability zero was drawn (%b)", tm.name, given, i)
				}
			}
		}
	}
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// TestExpectedSizeLarge: on n = 1200 items (d = 5, with and without a
// diagonal), the mean size of 300 samples is within 4 standard errors of
// ExpectedSize, which is tr(L(L + I)⁻¹) computed densely.
func TestExpectedSizeLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("dense check of a 1200×1200 kernel")
	}
	for _, diag := range []float64{0, 0.05} {
		m := ndpp.Random(1200, 5, 8, ndpp.RandomOptions{Diag: diag, Scale: 0.15})
		s, err := New(context.Background(), m, Options{})
		require.NoError(t, err)
		require.InDelta(t, mat.Trace(denseK(m)), s.ExpectedSize(), 1e-8, "diag %g: ExpectedSize", diag)
		rng := rand.New(rand.NewPCG(8, 8))
		const samples = 300
		var sum, sumSq float64
		for i := 0; i < samples; i++ {
			c := float64(len(draw(t, s, rng)))
			sum += c
			sumSq += c * c
		}
		mean := sum / samples
		sd := math.Sqrt((sumSq/samples - mean*mean) * samples / (samples - 1))
		t.Logf("diag %g: mean size %.3f ± %.3f, expected %.3f", diag, mean, sd/math.Sqrt(samples), s.ExpectedSize())
		require.Less(t, math.Abs(mean-s.ExpectedSize()), 4*sd/math.Sqrt(samples)+1e-9, "diag %g", diag)
	}
}

// TestBlocksAgree: on n = 5000, d = 10, samples drawn one item at a time
// and in blocks from the same random numbers are the same.
func TestBlocksAgree(t *testing.T) {
	m := ndpp.Random(5000, 10, 4, ndpp.RandomOptions{Diag: 0.01, Scale: 0.2})
	var ss []*Sampler
	for _, b := range []int{1, 16, 64} {
		s, err := New(context.Background(), m, Options{Block: b})
		require.NoError(t, err)
		ss = append(ss, s)
	}
	for i := uint64(0); i < 10; i++ {
		want := draw(t, ss[0], rand.New(rand.NewPCG(i, 9)))
		for _, s := range ss[1:] {
			require.Equal(t, want, draw(t, s, rand.New(rand.NewPCG(i, 9))), "block %d, sample %d", s.block, i)
		}
	}
}

// TestGivenErrors: invalid or impossible conditioning sets are errors.
func TestGivenErrors(t *testing.T) {
	m := ndpp.Random(12, 2, 1, ndpp.RandomOptions{})
	s, err := New(context.Background(), m, Options{})
	require.NoError(t, err)
	_, err = s.Given(context.Background(), []int{12})
	require.ErrorContains(t, err, "out of range")
	_, err = s.Given(context.Background(), []int{1, 1})
	require.ErrorContains(t, err, "duplicate")
	g, err := s.Given(context.Background(), []int{1})
	require.NoError(t, err)
	_, err = g.Given(context.Background(), []int{1})
	require.ErrorContains(t, err, "already given")
	// Five items of a rank-4 kernel are never in Y together.
	_, err = s.Given(context.Background(), []int{0, 1, 2, 3, 4})
	require.ErrorIs(t, err, ErrZeroProb)
	// With a diagonal they can be.
	md := ndpp.Random(12, 2, 1, ndpp.RandomOptions{Diag: 0.1})
	sd, err := New(context.Background(), md, Options{})
	require.NoError(t, err)
	g5, err := sd.Given(context.Background(), []int{0, 1, 2, 3, 4})
	require.NoError(t, err)
	for i := uint64(0); i < 20; i++ {
		y := draw(t, g5, rand.New(rand.NewPCG(i, 0)))
		for _, it := range []int{0, 1, 2, 3, 4} {
			require.Contains(t, y, it)
		}
	}
	require.Equal(t, []int{0, 1, 2, 3, 4}, g5.GivenItems())
	_, err = New(context.Background(), nil, Options{})
	require.Error(t, err)
	_, err = New(context.Background(), m, Options{Block: -1})
	require.ErrorContains(t, err, "block size")
}

// TestGivenComposes: conditioning on A then on B is conditioning on A ∪ B.
func TestGivenComposes(t *testing.T) {
	m := ndpp.Random(60, 4, 2, ndpp.RandomOptions{Diag: 0.2})
	s, err := New(context.Background(), m, Options{})
	require.NoError(t, err)
	ab, err := s.Given(context.Background(), []int{5, 40, 9})
	require.NoError(t, err)
	a, err := s.Given(context.Background(), []int{40})
	require.NoError(t, err)
	a2, err := a.Given(context.Background(), []int{9, 5})
	require.NoError(t, err)
	require.InDelta(t, ab.GivenLogProb(), a2.GivenLogProb(), 1e-10)
	require.InDelta(t, ab.ExpectedSize(), a2.ExpectedSize(), 1e-10)
	for i := uint64(0); i < 10; i++ {
		require.Equal(t, draw(t, ab, rand.New(rand.NewPCG(i, 3))), draw(t, a2, rand.New(rand.NewPCG(i, 3))), fmt.Sprint("sample ", i))
	}
}

// TestSampleAllocs: a sample into a buffer allocates nothing.
func TestSampleAllocs(t *testing.T) {
	m := ndpp.Random(500, 4, 2, ndpp.RandomOptions{Diag: 0.2})
	for _, b := range []int{1, 32} {
		s, err := New(context.Background(), m, Options{Block: b})
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 1))
		buf := make([]int, 0, m.N())
		ctx := context.Background()
		allocs := testing.AllocsPerRun(20, func() { buf, _ = s.SampleInto(ctx, rng, buf) })
		require.Zero(t, allocs, "block %d", b)
	}
}

// draw is Sampler.Sample without a deadline, failing t on an error.
func draw(t testing.TB, s *Sampler, rng *rand.Rand) []int {
	t.Helper()
	return drawInto(t, s, rng, nil)
}

// drawInto is Sampler.SampleInto without a deadline, failing t on an error.
func drawInto(t testing.TB, s *Sampler, rng *rand.Rand, dst []int) []int {
	t.Helper()
	y, err := s.SampleInto(context.Background(), rng, dst)
	require.NoError(t, err)
	return y
}
