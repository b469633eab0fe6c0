package learn

import (
	"fmt"
	"github.com/ndpp-go/ndpp/learn/internal/exactnorm"
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
)

// Tolerances of the online step's fast paths against the direct ones.
const (
	fastInvTol   = 1e-9  // |A·A⁻¹ − I| entries, relative to cond-free scale
	fastLogTol   = 1e-10 // relative, log-determinants
	fastPieceTol = 1e-10 // relative to the largest entry, K, ∂/∂C, G, basket pieces
)

// maxRelDiff returns max|a − b| / max(1e-300, max|a|).
func maxRelDiff(a, b []float64) float64 {
	diff, scale := 0.0, 1e-300
	for i := range a {
		diff = math.Max(diff, math.Abs(a[i]-b[i]))
		scale = math.Max(scale, math.Abs(a[i]))
	}
	return diff / scale
}

func TestOnlineFactorMatchesNormWork(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		d := []int{1, 2, 3, 5, 8, 30}[seed%6]
		n := []int{1, 7, 40, 100}[seed%4]
		o, err := NewOnline(OnlineOptions{D: d, N: n, Seed: seed, LowRank: true, Init: InitOptions{Scale: 0.2 * float64(seed), CScale: 0.3 * float64(seed%4)}})
		require.NoError(t, err)
		nw := exactnorm.NewWork(d)
		z := nw.Z(n)
		for i := range n {
			zRow(z[i*2*d:], o.p, i)
		}
		nw.Gram(z, n)
		ref := newNormWork(d)
		ref.gram(o.p)
		require.LessOrEqual(t, maxRelDiff(ref.g, nw.G), fastPieceTol, "seed %d: G", seed)
		for r := 0; r < 2*d; r++ {
			for s := 0; s < 2*d; s++ {
				require.Equal(t, nw.G[r*2*d+s], nw.G[s*2*d+r], "G symmetric")
			}
		}
		copy(ref.g, nw.G)
		require.True(t, nw.Factor(o.c))
		require.True(t, ref.factor(o.c))
		require.InDelta(t, ref.logDet, nw.LogDet, fastLogTol*math.Max(1, math.Abs(ref.logDet)), "seed %d", seed)
		require.LessOrEqual(t, maxRelDiff(ref.k, nw.K), fastPieceTol, "seed %d: K", seed)
		require.LessOrEqual(t, maxRelDiff(ref.gc, nw.GC), fastPieceTol, "seed %d: dC", seed)
		m, err := o.Model()
		require.NoError(t, err)
		want := m.LogNormalizer()
		require.InDelta(t, want, nw.LogDet, normLogTol*math.Max(1, math.Abs(want)), "seed %d", seed)
	}
}

func TestOnlineBasketTermMatchesBasketWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for seed := uint64(1); seed <= 16; seed++ {
		d := 1 + int(seed%5)*7
		n := 12
		norm := NormExact
		if seed%2 == 0 {
			norm = NormBasket
		}
		o, err := NewOnline(OnlineOptions{D: d, N: n, Seed: seed, Normalizer: norm, Shared: seed%3 == 0, LowRank: true,
			Init: InitOptions{Scale: 0.5, CScale: 0.5}})
		require.NoError(t, err)
		k := 1 + rng.IntN(min(n, 2*d))
		basket := rng.Perm(n)[:k]
		if seed%4 == 1 && k > 1 {
			// Nearly dependent items: item 1 a perturbed copy of item 0.
			i, j := basket[0], basket[1]
			for c := 0; c < d; c++ {
				o.p.V[j*d+c] = o.p.V[i*d+c] + 1e-6*rng.NormFloat64()
				o.p.brows()[j*d+c] = o.p.brows()[i*d+c] + 1e-6*rng.NormFloat64()
			}
		}
		bcS := make([]float64, k*d)
		bcRows(bcS, o.p, o.c, basket)
		o.basketTerm(basket)
		ref := newAccum(n, d)
		var w basketWork
		_, ok := w.basketTerm(o.p, bcS, basket, o.opt.Eps, norm == NormBasket, true, ref, 1)
		require.True(t, ok)
		tol := fastPieceTol * condScale(o, basket)
		// Scatter the basket's rows to item rows like ref's.
		gv, wv, uv := make([]float64, n*d), make([]float64, n*d), make([]float64, n*d)
		for q, i := range basket {
			g, w, u := o.w.row(q)
			copy(gv[i*d:], g)
			copy(wv[i*d:], w)
			copy(uv[i*d:], u)
		}
		require.LessOrEqual(t, maxRelDiff(ref.gv, gv), tol, "seed %d gv", seed)
		require.LessOrEqual(t, maxRelDiff(ref.w, wv), tol, "seed %d w", seed)
		// u = Σⱼ (P_ji − P_ij) bⱼ cancels when P is nearly symmetric (C
		// small; C = 0 for d = 1): its error is relative to the size of
		// the terms, that of w.
		uDiff, scale := 0.0, 1e-300
		for i := range ref.u {
			uDiff = math.Max(uDiff, math.Abs(ref.u[i]-uv[i]))
			scale = math.Max(scale, math.Max(math.Abs(ref.u[i]), math.Abs(ref.w[i])))
		}
		require.LessOrEqual(t, uDiff/scale, tol, "seed %d u", seed)
	}
}

// condScale is the condition number of L_S + εI, by which errors of its
// inverse scale.
func condScale(o *Online, s []int) float64 {
	l := directKernel(o.p, s, o.opt.Eps)
	return math.Max(1, mat.Cond(l, 1))
}

func TestOnlineCStepIsElementwiseStep(t *testing.T) {
	for _, optz := range []Optimizer{Adam, SGD} {
		rng := rand.New(rand.NewPCG(9, uint64(optz)))
		o, err := NewOnline(OnlineOptions{D: 6, N: 5, Optimizer: optz, CEvery: 1})
		require.NoError(t, err)
		d := 6
		for step := 0; step < 5; step++ {
			for i := range o.pendC {
				o.pendC[i] = rng.NormFloat64()
			}
			o.pos++
			// Reference: the element-wise step on the full D.
			x := append([]float64(nil), o.p.D...)
			m := append([]float64(nil), o.mom.D...)
			v := append([]float64(nil), o.sq.D...)
			g := make([]float64, d*d)
			for r := 0; r < d; r++ {
				for c := 0; c < d; c++ {
					g[r*d+c] = o.pendC[r*d+c] - o.pendC[c*d+r]
				}
			}
			if optz == SGD {
				blas.Axpy(o.opt.LR, g, x)
			} else {
				adamStep(x, m, v, g, o.opt.LR, int(o.tc+1))
			}
			require.True(t, o.stepD())
			require.Equal(t, x, o.p.D, "step %d", step)
			if optz == Adam {
				require.Equal(t, m, o.mom.D)
				require.Equal(t, v, o.sq.D)
			}
			require.Equal(t, o.p.CInto(nil), o.c)
		}
	}
}

// TestOnlineCStepPairsMatchRankOne checks that the basket terms' pairs kept
// for stepD (and folded into pendC when many) give the step of their
// rank-1 sum Σ bₜwₜᵀ added to pendC.
func TestOnlineCStepPairsMatchRankOne(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		d := []int{1, 2, 5, 30}[seed%4]
		pairs := []int{0, 1, 3, 17, maxPendPairs + 5}[seed%5]
		for _, optz := range []Optimizer{Adam, SGD} {
			a, err := NewOnline(OnlineOptions{D: d, N: 3, Optimizer: optz, CEvery: 1, Seed: seed})
			require.NoError(t, err)
			b, err := NewOnline(OnlineOptions{D: d, N: 3, Optimizer: optz, CEvery: 1, Seed: seed})
			require.NoError(t, err)
			for i := range a.pendC {
				a.pendC[i] = rng.NormFloat64()
			}
			copy(b.pendC, a.pendC)
			for q := 0; q < pairs; q++ {
				bt, wt := make([]float64, d), make([]float64, d)
				for r := range bt {
					bt[r], wt[r] = rng.NormFloat64(), rng.NormFloat64()
				}
				for r := range bt {
					for c := range wt {
						b.pendC[r*d+c] += bt[r] * wt[c]
					}
				}
				a.pendBW = append(a.pendBW, wt...)
				a.pendBW = append(a.pendBW, bt...)
				if len(a.pendBW) >= 2*d*maxPendPairs {
					a.foldPairs()
				}
			}
			a.pos, b.pos = 1, 1
			require.True(t, a.stepD())
			require.True(t, b.stepD())
			require.Empty(t, a.pendBW)
			for i := range a.p.D {
				require.InDelta(t, b.p.D[i], a.p.D[i], pairStepTol, "seed %d %v entry %d", seed, optz, i)
			}
		}
	}
}

// TestOnlinePendProductMatchesNaive compares the pairs' product Σₜ bₜwₜᵀ
// (read in place from pendBW by the four-row kernel, or gathered for
// vecmatN) with the plain triple loop, for d on both sides of the kernel's
// four-row groups.
func TestOnlinePendProductMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{1, 2, 3, 4, 5, 7, 8, 30, 33} {
		for _, k := range []int{0, 1, 2, 5, 58} {
			o, err := NewOnline(OnlineOptions{D: d, N: 1})
			require.NoError(t, err)
			for q := 0; q < k; q++ {
				for r := 0; r < 2*d; r++ {
					o.pendBW = append(o.pendBW, rng.NormFloat64()*math.Exp2(float64(rng.IntN(7)-3)))
				}
			}
			got := o.pendProduct()
			require.Len(t, got, d*d)
			for r := 0; r < d; r++ {
				for c := 0; c < d; c++ {
					want, mag := 0.0, 0.0
					for q := 0; q < k; q++ {
						p := o.pendBW[(2*q+1)*d+r] * o.pendBW[2*q*d+c]
						want += p
						mag += math.Abs(p)
					}
					require.InDelta(t, want, got[r*d+c], float64(k+1)*0x1p-52*mag+1e-300, "d %d k %d entry (%d,%d)", d, k, r, c)
				}
			}
		}
	}
}

// pairStepTol bounds the difference of one C step computed from pairs and
// from their rank-1 sum (rounding of sums of ~300 terms; Adam's step is
// lr-sized whatever the gradient's scale).
const pairStepTol = 1e-9

func BenchmarkOnlineRefactor(b *testing.B) {
	for _, n := range []int{100, 300} {
		o, err := NewOnline(OnlineOptions{D: 30, N: n})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d/d=30/method=gemm+gauss-jordan", n), func(b *testing.B) {
			b.ReportAllocs()
			nw := exactnorm.NewWork(30)
			for i := 0; i < b.N; i++ {
				z := nw.Z(n)
				for i := range n {
					zRow(z[i*60:], o.p, i)
				}
				blas64.Implementation().Dgemm(gblas.Trans, gblas.NoTrans, 60, 60, n, 1, z, 60, z, 60, 0, nw.G, 60)
				nw.Factor(o.c)
			}
		})
		b.Run(fmt.Sprintf("n=%d/d=30/method=fast", n), func(b *testing.B) {
			b.ReportAllocs()
			nw := exactnorm.NewWork(30)
			z := nw.Z(n)
			for i := range n {
				zRow(z[i*60:], o.p, i)
			}
			for i := 0; i < b.N; i++ {
				nw.Gram(z, n)
				nw.Factor(o.c)
			}
		})
	}
}

func TestGemvMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for rows := 0; rows <= 13; rows++ {
		for _, cols := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 30, 31, 60, 100} {
			m := make([]float64, rows*cols)
			for i := range m {
				m[i] = rng.NormFloat64()
			}
			x := make([]float64, cols)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			out := make([]float64, rows+1)
			out[rows] = 42 // past the end: untouched
			gemv(out[:rows], m, rows, cols, x, -0.5)
			for r := 0; r < rows; r++ {
				want, scale := 0.0, 0.0
				for c := 0; c < cols; c++ {
					want += m[r*cols+c] * x[c]
					scale += math.Abs(m[r*cols+c] * x[c])
				}
				require.InDelta(t, -0.5*want, out[r], 1e-14*scale, "rows %d cols %d row %d", rows, cols, r)
			}
			require.Equal(t, 42.0, out[rows])
		}
	}
}

func TestVecmatMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	for _, rows := range []int{0, 1, 2, 3, 4, 5, 7, 30, 31, 60} {
		for _, cols := range []int{0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 20, 21, 30, 33, 60, 61} {
			m := make([]float64, rows*cols)
			for i := range m {
				m[i] = rng.NormFloat64()
			}
			x := make([]float64, rows)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			out := make([]float64, cols+1)
			out[cols] = 42
			for j := range out[:cols] {
				out[j] = math.NaN() // overwritten, not accumulated
			}
			vecmat.One(out[:cols], m, rows, cols, x, -2)
			for j := 0; j < cols; j++ {
				want, scale := 0.0, 0.0
				for l := 0; l < rows; l++ {
					want += x[l] * m[l*cols+j]
					scale += math.Abs(x[l] * m[l*cols+j])
				}
				require.InDelta(t, -2*want, out[j], 1e-14*scale, "rows %d cols %d col %d", rows, cols, j)
			}
			require.Equal(t, 42.0, out[cols])
		}
	}
}
