package sample

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// treeModels are models of the kinds the tree sampler takes (no
// diagonal): general, with B = V, with a singular C (odd d), and an
// orthogonal one (V ⊥ B).
func treeModels(t testing.TB, n int, seed uint64) []testModel {
	syn, err := Synthetic(context.Background(), n, 3, seed, SyntheticOptions{Rejections: 1.5})
	require.NoError(t, err)
	return []testModel{
		{"general d=2", ndpp.Random(n, 2, seed, ndpp.RandomOptions{})},
		{"shared d=3", ndpp.Random(n, 3, seed, ndpp.RandomOptions{Shared: true})},
		{"block-diagonal C, odd d=3", ndpp.Random(n, 3, seed, ndpp.RandomOptions{BlockDiagonal: true})},
		{"synthetic V ⊥ B d=3", syn},
	}
}

// denseHat returns L̂ = S + (AᵀA)^½ for the dense kernel L = S + A (by
// the SVD of A).
func denseHat(m *ndpp.Model) *mat.Dense {
	l := denseL(m)
	n := m.N()
	s := mat.NewSymDense(n, nil)
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s.SetSym(i, j, (l.At(i, j)+l.At(j, i))/2)
			a.Set(i, j, (l.At(i, j)-l.At(j, i))/2)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDFull) {
		panic("svd")
	}
	var pv mat.Dense
	svd.VTo(&pv)
	out := mat.NewDense(n, n, nil)
	for j, x := range svd.Values(nil) {
		for p := 0; p < n; p++ {
			for q := 0; q < n; q++ {
				out.Set(p, q, out.At(p, q)+x*pv.At(p, j)*pv.At(q, j))
			}
		}
	}
	out.Add(out, s)
	return out
}

// hatFromProposal returns Φ Λ Φᵀ from the proposal's coordinates.
func hatFromProposal(p *Proposal) *mat.Dense {
	m := p.Model()
	n, r := m.N(), p.r
	phi := make([]float64, n*p.rho)
	z := make([]float64, r)
	for i := 0; i < n; i++ {
		rawZ(m, i, z)
		p.phi(z, phi[i*p.rho:(i+1)*p.rho])
	}
	out := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for c := 0; c < p.rho; c++ {
				s += phi[i*p.rho+c] * p.lambda[c] * phi[j*p.rho+c]
			}
			out.Set(i, j, s)
		}
	}
	return out
}

// TestProposal: L̂ from the proposal's eigenvalues and coordinates is the
// dense S + (AᵀA)^½; det L_Y ≤ det L̂_Y for every subset (n = 10);
// ExpectedTries is det(I + L̂)/det(I + L); Theorem2 equals it when V ⊥ B.
func TestProposal(t *testing.T) {
	const n = 10
	for _, tm := range treeModels(t, n, 4) {
		m := tm.m
		p, err := NewProposal(context.Background(), m)
		require.NoError(t, err, tm.name)
		hat := hatFromProposal(p)
		want := denseHat(m)
		require.True(t, mat.EqualApprox(hat, want, 1e-10), "%s: L̂ against the dense S + |A|:\n%v\n%v", tm.name, mat.Formatted(hat), mat.Formatted(want))
		l := denseL(m)
		worst := math.Inf(-1)
		for mask := 1; mask < 1<<n; mask++ {
			items := maskItems(mask, n)
			dl := mat.Det(subMatrix(l, items))
			dh := mat.Det(subMatrix(hat, items))
			scale := 1.0
			for _, i := range items {
				scale *= hat.At(i, i)
			}
			worst = math.Max(worst, (dl-dh)/math.Max(scale, 1e-300))
		}
		require.LessOrEqual(t, worst, 1e-10, "%s: det L_Y ≤ det L̂_Y (relative to Π L̂_ii)", tm.name)
		ip, il := mat.DenseCopyOf(hat), mat.DenseCopyOf(l)
		for i := 0; i < n; i++ {
			ip.Set(i, i, ip.At(i, i)+1)
			il.Set(i, i, il.At(i, i)+1)
		}
		require.InDelta(t, mat.Det(ip)/mat.Det(il), p.ExpectedTries(), 1e-9*p.ExpectedTries(), tm.name)
		require.InDelta(t, mat.Trace(denseK(m)), p.ExpectedSize(), 1e-9, tm.name)
		t.Logf("%-28s ρ = %d, tries %.6f, Theorem 2 %.6f, orthogonality %.2g", tm.name, p.Rank(), p.ExpectedTries(), p.Theorem2(), p.Orthogonality())
		if p.Orthogonality() < 1e-12 {
			require.InDelta(t, p.ExpectedTries(), p.Theorem2(), 1e-9*p.ExpectedTries(), tm.name)
		}
	}
	_, err := NewProposal(context.Background(), ndpp.Random(10, 2, 1, ndpp.RandomOptions{Diag: 0.1}))
	require.ErrorIs(t, err, ErrDiagonal)
}

// TestTreeProposalChiSquare: the tree's proposals follow the DPP of L̂,
// det L̂_Y / det(I + L̂), for several leaf sizes (deep trees and one
// leaf).
func TestTreeProposalChiSquare(t *testing.T) {
	const n, samples = 10, 20000
	for mi, tm := range treeModels(t, n, 8) {
		p, err := NewProposal(context.Background(), tm.m)
		require.NoError(t, err)
		hat := hatFromProposal(p)
		probs := make([]float64, 1<<n)
		z := 0.0
		for mask := range probs {
			items := maskItems(mask, n)
			v := 1.0
			if len(items) > 0 {
				v = math.Max(0, mat.Det(subMatrix(hat, items)))
			}
			probs[mask] = v
			z += v
		}
		for i := range probs {
			probs[i] /= z
		}
		for _, leaf := range []int{1, 3, n} {
			ts, err := NewTree(context.Background(), p, TreeOptions{Leaf: leaf})
			require.NoError(t, err)
			counts := make([]int, 1<<n)
			rng := rand.New(rand.NewPCG(uint64(mi), uint64(leaf)))
			var y []int
			for i := 0; i < samples; i++ {
				y = ts.propose(rng, y[:0])
				mask := 0
				for _, it := range y {
					mask |= 1 << it
				}
				counts[mask]++
			}
			stat, df, pv := ndpptest.ChiSquare(counts, probs, samples)
			t.Logf("%-28s leaf %2d: proposals chi-square %8.2f, df %4d, p = %.3f", tm.name, leaf, stat, df, pv)
			require.Greater(t, pv, minP, "%s leaf %d", tm.name, leaf)
		}
	}
}

// TestTreeChiSquare: tree samples follow det L_Y / det(I + L) (chi-square
// over the subsets of n = 10 items), and the mean number of proposals per
// sample matches ExpectedTries.
func TestTreeChiSquare(t *testing.T) {
	const n, samples = 10, 20000
	for mi, tm := range treeModels(t, n, 12) {
		dets, _ := subsetDets(t, tm.m)
		total := 0.0
		for _, v := range dets {
			total += v
		}
		probs := make([]float64, len(dets))
		for i, v := range dets {
			probs[i] = v / total
		}
		p, err := NewProposal(context.Background(), tm.m)
		require.NoError(t, err)
		for _, leaf := range []int{2, 4} {
			ts, err := NewTree(context.Background(), p, TreeOptions{Leaf: leaf})
			require.NoError(t, err)
			counts := make([]int, len(dets))
			rng := rand.New(rand.NewPCG(uint64(mi), 77))
			var y []int
			for i := 0; i < samples; i++ {
				y, err = ts.SampleInto(context.Background(), rng, y)
				require.NoError(t, err)
				mask := 0
				for _, it := range y {
					mask |= 1 << it
				}
				counts[mask]++
			}
			stat, df, pv := ndpptest.ChiSquare(counts, probs, samples)
			st := ts.Stats()
			mean := float64(st.Tries) / float64(st.Samples)
			acc := 1 / p.ExpectedTries()
			se := math.Sqrt((1-acc)/(acc*acc)) / math.Sqrt(samples)
			t.Logf("%-28s leaf %d: chi-square %8.2f, df %4d, p = %.3f; proposals per sample %.3f (expected %.3f)", tm.name, leaf, stat, df, pv, mean, p.ExpectedTries())
			require.Greater(t, pv, minP, "%s leaf %d", tm.name, leaf)
			require.Less(t, math.Abs(mean-p.ExpectedTries()), 4*se+1e-9, "%s: proposals per sample", tm.name)
		}
	}
}

// TestTreeErrors: a budget too small is refused before allocating, a bad
// leaf size is an error, and a done context stops the build and a sample.
func TestTreeErrors(t *testing.T) {
	m := ndpp.Random(3*gramChunk, 3, 1, ndpp.RandomOptions{})
	p, err := NewProposal(context.Background(), m)
	require.NoError(t, err)
	_, err = NewTree(context.Background(), p, TreeOptions{MaxMemory: 1000})
	require.ErrorIs(t, err, ndpp.ErrMemoryBudget)
	need, limit, ok := ndpp.MemoryBudget(err)
	require.True(t, ok)
	require.Equal(t, int64(1000), limit)
	require.Equal(t, TreeMemory(m.N(), p.Rank(), DefaultLeaf), need)
	_, err = NewTree(context.Background(), p, TreeOptions{Leaf: -1})
	require.ErrorContains(t, err, "leaf")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewTree(done, p, TreeOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = NewProposal(done, m)
	require.ErrorIs(t, err, context.Canceled)
	ts, err := NewTree(context.Background(), p, TreeOptions{})
	require.NoError(t, err)
	_, err = ts.Sample(done, rand.New(rand.NewPCG(1, 1)))
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, errors.Is(err, context.Canceled))
	require.Equal(t, int64(-1), TreeMemory(0, 3, 1))
}

// TestSynthetic: the synthetic kernel has V ⊥ B, its expected number of
// rejections is the one asked for (Theorem 2 and the determinants agree),
// and the same seed gives the same model.
func TestSynthetic(t *testing.T) {
	ctx := context.Background()
	m, err := Synthetic(ctx, 20000, 16, 3, SyntheticOptions{})
	require.NoError(t, err)
	require.False(t, m.HasDiag())
	p, err := NewProposal(ctx, m)
	require.NoError(t, err)
	t.Logf("ρ = %d, orthogonality %.2g, expected rejections %.4f (Theorem 2 %.4f), proposal size %.2f", p.Rank(), p.Orthogonality(), p.ExpectedRejections(), p.Theorem2()-1, p.ProposalSize())
	require.Less(t, p.Orthogonality(), 1e-12)
	require.InDelta(t, DefaultSyntheticRejections, p.ExpectedRejections(), 1e-6)
	require.InDelta(t, p.ExpectedTries(), p.Theorem2(), 1e-8)
	m2, err := Synthetic(ctx, 20000, 16, 3, SyntheticOptions{})
	require.NoError(t, err)
	v1, b1, _, c1 := m.Rows()
	v2, b2, _, c2 := m2.Rows()
	require.Equal(t, v1, v2)
	require.Equal(t, b1, b2)
	require.Equal(t, c1, c2)
	// Small d: the product stops at 2^{d/2}.
	ms, err := Synthetic(ctx, 100, 4, 1, SyntheticOptions{})
	require.NoError(t, err)
	ps, err := NewProposal(ctx, ms)
	require.NoError(t, err)
	require.InDelta(t, 3, ps.ExpectedRejections(), 1e-8)
	_, err = Synthetic(ctx, 10, 6, 1, SyntheticOptions{})
	require.ErrorContains(t, err, "2d")
	_, err = Synthetic(ctx, 100, 4, 1, SyntheticOptions{MaxMemory: 100})
	require.ErrorIs(t, err, ndpp.ErrMemoryBudget)
}

// TestChooseMethod: the tree is chosen on a large orthogonal kernel, the
// linear sampler on a small general kernel (proposals of some 2d items
// against a sweep over 2,000) and for a single sample of a small
// catalogue.
func TestChooseMethod(t *testing.T) {
	ctx := context.Background()
	syn, err := Synthetic(ctx, 100000, 20, 1, SyntheticOptions{})
	require.NoError(t, err)
	p, err := NewProposal(ctx, syn)
	require.NoError(t, err)
	got, why := ChooseMethod(p, 10, 0)
	require.Equal(t, MethodTree, got, why)
	gen := ndpp.Random(2000, 20, 1, ndpp.RandomOptions{})
	pg, err := NewProposal(ctx, gen)
	require.NoError(t, err)
	got, why = ChooseMethod(pg, 10, 0)
	t.Log(why)
	require.Equal(t, MethodLinear, got, why)
	small, err := Synthetic(ctx, 300, 20, 1, SyntheticOptions{})
	require.NoError(t, err)
	ps, err := NewProposal(ctx, small)
	require.NoError(t, err)
	got, why = ChooseMethod(ps, 1, 0)
	require.Equal(t, MethodLinear, got, why)
	for _, s := range []string{"auto", "linear", "tree"} {
		m, err := ParseMethod(s)
		require.NoError(t, err)
		require.Equal(t, s, string(m))
	}
	_, err = ParseMethod("fast")
	require.ErrorContains(t, err, "unknown method")
}
