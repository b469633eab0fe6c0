package sample

import (
	"context"
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// kLaw returns the k-NDPP's probabilities over all subsets (bit i = item
// i) given the items of gmask, from the enumerated determinants, and
// P_t(|Y| = k | given) for the NDPP of t·L.
func kLaw(dets []float64, k, gmask int, t float64) (probs []float64, pk float64) {
	probs = make([]float64, len(dets))
	var z, all float64
	ng := popcount(gmask)
	for mask, v := range dets {
		if mask&gmask != gmask {
			continue
		}
		c := popcount(mask)
		w := v * math.Pow(t, float64(c-ng))
		all += w
		if c == k {
			probs[mask] = v
			z += v
			pk += w
		}
	}
	for i := range probs {
		probs[i] /= z
	}
	return probs, pk / all
}

// TestKSampleChiSquare: on n = 10 items, k-NDPP samples follow
// det L_Y / Σ_{|Y'| = k, Y' ⊇ A} det L_Y' (Pearson's chi-square at a fixed
// seed), for every model kind, several k and given items; ExpectedTries is
// 1/P_t(|Y| = k) by enumeration, the mean number of tries matches it, and a
// k above the rank bound is refused.
func TestKSampleChiSquare(t *testing.T) {
	const n, samples = 10, 10000
	ctx := context.Background()
	for mi, tm := range testModels(n, 33) {
		m := tm.m
		dets, _ := subsetDets(t, m)
		for _, given := range [][]int{nil, {2}, {7, 4}} {
			var gmask int
			for _, g := range given {
				gmask |= 1 << g
			}
			for _, k := range []int{1, 3, 5, 7} {
				if k < len(given) {
					continue
				}
				ks, err := NewK(ctx, m, k, KOptions{Given: given})
				if k > m.MaxRank() {
					require.ErrorIs(t, err, ErrSizeZeroProb, "%s k=%d", tm.name, k)
					require.ErrorContains(t, err, "rank")
					continue
				}
				require.NoError(t, err, "%s given %v k=%d", tm.name, given, k)
				probs, pk := kLaw(dets, k, gmask, ks.Scale())
				if k == len(given) {
					pk = 1 // no try: the given items are the sample
				}
				tries, err := ks.ExpectedTries(ctx)
				require.NoError(t, err)
				require.InDelta(t, 1, pk*tries, 1e-8, "%s given %v k=%d: ExpectedTries against enumeration", tm.name, given, k)
				require.InDelta(t, float64(k), ks.ExpectedSize(), 0.06, "%s given %v k=%d: E|Y| at the chosen scale", tm.name, given, k)

				counts := make([]int, len(dets))
				rng := rand.New(rand.NewPCG(uint64(mi), uint64(k*10+len(given))))
				var buf []int
				for i := 0; i < samples; i++ {
					buf, err = ks.SampleInto(ctx, rng, buf)
					require.NoError(t, err)
					require.Len(t, buf, k)
					mask := 0
					for _, it := range buf {
						mask |= 1 << it
					}
					counts[mask]++
				}
				if k == len(given) {
					require.Equal(t, samples, counts[gmask])
					continue
				}
				stat, df, p := ndpptest.ChiSquare(counts, probs, samples)
				st := ks.Stats()
				meanTries := float64(st.Tries) / float64(st.Samples)
				se := math.Sqrt((1-pk)/(pk*pk)) / math.Sqrt(samples)
				t.Logf("%-44s given %-6v k=%d: chi-square %8.2f, df %4d, p = %.3f; t = %.3g, tries %.3f (expected %.3f)",
					tm.name, given, k, stat, df, p, ks.Scale(), meanTries, tries)
				require.Greater(t, p, minP, "%s given %v k=%d: chi-square %.2f with %d df", tm.name, given, k, stat, df)
				require.Less(t, math.Abs(meanTries-tries), 4*se+1e-9, "%s given %v k=%d: mean tries", tm.name, given, k)
				for i := range counts {
					if probs[i] == 0 {
						require.Zero(t, counts[i], "%s: a set of probability zero was drawn (%b)", tm.name, i)
					}
				}
			}
		}
	}
}

// nearSingular returns a model of n items without a diagonal where item 1
// is item 0 up to 1e-6 (det L_Y ≈ 0 for the sets holding both).
func nearSingular(n, d int, seed uint64) *ndpp.Model {
	m := ndpp.Random(n, d, seed, ndpp.RandomOptions{})
	v, b, _, c := m.Rows()
	v, b = append([]float64(nil), v...), append([]float64(nil), b...)
	rng := rand.New(rand.NewPCG(seed, 1))
	for j := 0; j < d; j++ {
		v[d+j] = v[j] + 1e-6*rng.NormFloat64()
		b[d+j] = b[j] + 1e-6*rng.NormFloat64()
	}
	out, err := ndpp.NewFromRows(n, d, v, b, c)
	if err != nil {
		panic(err)
	}
	return out
}

// lowRank returns a model with B = V stored apart (not shared), whose
// kernel Vᵀ(I + C)V has rank d, not the bound 2d.
func lowRank(n, d int, seed uint64) *ndpp.Model {
	m := ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: true})
	v, _, _, c := m.Rows()
	out, err := ndpp.NewFromRows(n, d, v, append([]float64(nil), v...), c)
	if err != nil {
		panic(err)
	}
	return out
}

// TestKSampleNearSingular: the k-NDPP of a kernel with two almost equal
// items follows the enumerated law, and a k above the numerical rank of a
// kernel whose rank is below its bound is refused.
func TestKSampleNearSingular(t *testing.T) {
	const n, samples = 10, 20000
	ctx := context.Background()
	for _, c := range []struct {
		name string
		m    *ndpp.Model
		k    int
	}{{"items 0 and 1 within 1e-6", nearSingular(n, 3, 5), 4}, {"rank d = 3 of bound 6", lowRank(n, 3, 6), 3}} {
		dets, _ := subsetDets(t, c.m)
		ks, err := NewK(ctx, c.m, c.k, KOptions{})
		require.NoError(t, err, c.name)
		probs, pk := kLaw(dets, c.k, 0, ks.Scale())
		tries, err := ks.ExpectedTries(ctx)
		require.NoError(t, err)
		require.InDelta(t, 1, pk*tries, 1e-6, c.name)
		counts := make([]int, len(dets))
		rng := rand.New(rand.NewPCG(9, 9))
		for i := 0; i < samples; i++ {
			y, err := ks.Sample(ctx, rng)
			require.NoError(t, err)
			mask := 0
			for _, it := range y {
				mask |= 1 << it
			}
			counts[mask]++
		}
		stat, df, p := ndpptest.ChiSquare(counts, probs, samples)
		t.Logf("%s: k=%d chi-square %.2f, df %d, p = %.3f, tries %.3f", c.name, c.k, stat, df, p, tries)
		require.Greater(t, p, minP, c.name)
	}
	_, err := NewK(ctx, lowRank(n, 3, 6), 4, KOptions{})
	require.ErrorIs(t, err, ErrSizeZeroProb)
	require.ErrorContains(t, err, "numerical rank")
}

// TestKSampleErrors: invalid sizes and items are errors; k equal to the
// number of given items returns them.
func TestKSampleErrors(t *testing.T) {
	ctx := context.Background()
	m := ndpp.Random(12, 2, 1, ndpp.RandomOptions{})
	_, err := NewK(ctx, nil, 1, KOptions{})
	require.Error(t, err)
	_, err = NewK(ctx, m, 1, KOptions{Given: []int{1, 2}})
	require.ErrorContains(t, err, "below")
	_, err = NewK(ctx, m, 13, KOptions{})
	require.ErrorIs(t, err, ErrSizeZeroProb)
	_, err = NewK(ctx, m, 5, KOptions{})
	require.ErrorIs(t, err, ErrSizeZeroProb)
	require.ErrorContains(t, err, "rank bound 4")
	_, err = NewK(ctx, m, 2, KOptions{Given: []int{12}})
	require.ErrorContains(t, err, "out of range")
	_, err = NewK(ctx, m, 2, KOptions{Block: -1})
	require.ErrorContains(t, err, "block")
	ks, err := NewK(ctx, m, 2, KOptions{Given: []int{5, 3}})
	require.NoError(t, err)
	y, err := ks.Sample(ctx, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	require.Equal(t, []int{3, 5}, y)
	tries, err := ks.ExpectedTries(ctx)
	require.NoError(t, err)
	require.Equal(t, 1.0, tries)
	// Items that are never together.
	mz := lowRank(12, 2, 1)
	_, err = NewK(ctx, mz, 3, KOptions{Given: []int{0, 1, 2}})
	require.True(t, errors.Is(err, ErrZeroProb) || errors.Is(err, ErrSizeZeroProb), "%v", err)
}

// denseSizeProb returns P_t(|Y| = k) for the NDPP of t·L from the
// eigenvalues λ of the dense L: the coefficients of Πⱼ(1 + s·tλⱼ)/(1 + tλⱼ),
// by convolution in complex arithmetic.
func denseSizeProb(m *ndpp.Model, t float64, k int) float64 {
	var eig mat.Eigen
	if !eig.Factorize(denseL(m), mat.EigenNone) {
		panic("eigen")
	}
	poly := []complex128{1}
	for _, l := range eig.Values(nil) {
		tl := complex(t, 0) * l
		next := make([]complex128, len(poly)+1)
		for j, c := range poly {
			next[j] += c / (1 + tl)
			next[j+1] += c * tl / (1 + tl)
		}
		poly = next
	}
	return real(poly[k]) + 0*cmplx.Abs(poly[k])
}

// TestKSampleExpectedTriesDiag: with a diagonal on n = 300 items, where
// the transform does not cover every size, ExpectedTries matches the
// size distribution from the dense kernel's eigenvalues.
func TestKSampleExpectedTriesDiag(t *testing.T) {
	ctx := context.Background()
	for _, opt := range []ndpp.RandomOptions{{Diag: 0.02, Scale: 0.2}, {Diag: 0.01, Shared: true, Scale: 0.3}} {
		m := ndpp.Random(300, 4, 3, opt)
		for _, k := range []int{3, 12} {
			ks, err := NewK(ctx, m, k, KOptions{})
			require.NoError(t, err)
			tries, err := ks.ExpectedTries(ctx)
			require.NoError(t, err)
			want := denseSizeProb(m, ks.Scale(), k)
			t.Logf("%+v k=%d: t = %.4g, P(|Y| = k) = %.10f (dense %.10f)", opt, k, ks.Scale(), 1/tries, want)
			require.InDelta(t, 1, want*tries, 1e-6)
		}
	}
}
