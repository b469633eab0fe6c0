package learn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
)

// Tolerances of the gradient checks.
const (
	fdStep = 1e-4 // step of the fourth-order central difference
	// fdRelTol bounds |analytic - FD| / max(1, max|analytic|) per block; the
	// five-point stencil has error O(h^4) + O(eps_mach*|f|/h), about 1e-10 here.
	fdRelTol = 1e-7
	// fdNearSingularTol is the same bound for nearly singular kernels
	// (condition number about 1e5): higher derivatives are large there, so the
	// finite difference itself is less accurate.
	fdNearSingularTol = 1e-5
	// valueTol is the relative agreement of objective values with gonum.
	valueTol = 1e-9
	// paperOffMin is the smallest relative error the paper's symmetric
	// formulas (2·V_S·A⁻¹, 2·C·B_S·A⁻¹) must show on nonsymmetric kernels:
	// the check must be able to tell the two apart.
	paperOffMin = 1e-3
)

// directLogDet computes log det of a k×k dense matrix with gonum's LU.
func directLogDet(a *mat.Dense) float64 {
	var lu mat.LU
	lu.Factorize(a)
	ld, s := lu.LogDet()
	if s <= 0 {
		return math.NaN()
	}
	return ld
}

// directKernel builds L_S (+ shift·I) entry by entry from p with gonum.
func directKernel(p *Params, items []int, shift float64) *mat.Dense {
	d := p.Dim
	C := mat.NewDense(d, d, p.CInto(nil))
	b := p.brows()
	k := len(items)
	L := mat.NewDense(k, k, nil)
	for r, i := range items {
		for s, j := range items {
			vi := mat.NewVecDense(d, append([]float64(nil), p.V[i*d:(i+1)*d]...))
			vj := mat.NewVecDense(d, append([]float64(nil), p.V[j*d:(j+1)*d]...))
			bi := mat.NewVecDense(d, append([]float64(nil), b[i*d:(i+1)*d]...))
			bj := mat.NewVecDense(d, append([]float64(nil), b[j*d:(j+1)*d]...))
			var cb mat.VecDense
			cb.MulVec(C, bj)
			x := mat.Dot(vi, vj) + mat.Dot(bi, &cb)
			if p.Theta != nil { // the rows held are the item vectors over √(1 + δ)
				x *= math.Sqrt(1+math.Exp(p.Theta[i])) * math.Sqrt(1+math.Exp(p.Theta[j]))
				if r == s {
					x += math.Exp(p.Theta[i])
				}
			}
			if r == s {
				x += shift
			}
			L.Set(r, s, x)
		}
	}
	return L
}

// objSpec says which terms the objective has.
type objSpec struct {
	eps        float64
	restricted bool // − log det(I + L_S) per basket
	full       bool // − log det(I + L) once
}

// directObjective is Σ_S [log det(L_S+εI) − restricted·log det(I+L_S)] −
// full·log det(I+L), with the full normaliser as an n×n determinant.
func directObjective(p *Params, baskets [][]int, o objSpec) float64 {
	f := 0.0
	for _, s := range baskets {
		f += directLogDet(directKernel(p, s, o.eps))
		if o.restricted {
			f -= directLogDet(directKernel(p, s, 1))
		}
	}
	if o.full {
		all := make([]int, p.N)
		for i := range all {
			all[i] = i
		}
		f -= directLogDet(directKernel(p, all, 1))
	}
	return f
}

// analyticGrad evaluates the objective with the package's code.
func analyticGrad(t *testing.T, p *Params, baskets [][]int, o objSpec) (float64, *Grad) {
	g := NewGrad(p)
	acc := newAccum(p.N, p.Dim)
	c := p.CInto(nil)
	var w basketWork
	bc := make([]float64, 64*p.Dim)
	for _, s := range baskets {
		bcRows(bc, p, c, s)
		_, ok := w.basketTerm(p, bc, s, o.eps, o.restricted, true, acc, 1)
		require.True(t, ok)
	}
	gb := make([]float64, p.N*p.Dim) // the normaliser's direct rows of B
	if o.full {
		nw := newNormWork(p.Dim)
		nw.gram(p)
		require.True(t, nw.factor(c))
		for i := 0; i < p.N; i++ {
			nw.applyItem(p, i, acc, gb, -1)
			v, dt := diagNorm(p, i)
			acc.value -= v
			acc.gt[i] -= dt
		}
		nw.applyC(acc, -1)
		acc.value -= nw.logDet
	}
	acc.finish(p, c, g, true)
	if g.B != nil {
		blas.Axpy(1, gb, g.B)
	} else {
		blas.Axpy(1, gb, g.V)
	}
	return acc.value, g
}

// fdCheck compares one parameter block with central differences of
// directObjective.
func fdCheck(t *testing.T, name string, p *Params, x, analytic []float64, baskets [][]int, o objSpec, tol float64) {
	t.Helper()
	fdCheckFn(t, name, x, analytic, func() float64 { return directObjective(p, baskets, o) }, tol)
}

// fdCheckFn compares the analytic gradient of obj with respect to x (obj
// reads x) with fourth-order central differences.
func fdCheckFn(t *testing.T, name string, x, analytic []float64, obj func() float64, tol float64) {
	t.Helper()
	fdCheckAt(t, name, x, analytic, obj, tol, nil)
}

// fdCheckAt is fdCheckFn at the coordinates idx of x (nil: all of them).
func fdCheckAt(t *testing.T, name string, x, analytic []float64, obj func() float64, tol float64, idx []int) {
	t.Helper()
	if idx == nil {
		idx = make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
	}
	maxErr, scale := 0.0, 1.0
	for _, i := range idx {
		orig := x[i]
		f := func(h float64) float64 {
			x[i] = orig + h
			defer func() { x[i] = orig }()
			return obj()
		}
		fd := (-f(2*fdStep) + 8*f(fdStep) - 8*f(-fdStep) + f(-2*fdStep)) / (12 * fdStep)
		maxErr = math.Max(maxErr, math.Abs(fd-analytic[i]))
		scale = math.Max(scale, math.Abs(analytic[i]))
	}
	require.LessOrEqual(t, maxErr/scale, tol, "%s: max |analytic − FD| = %.3g (scale %.3g)", name, maxErr, scale)
}

// regularisedObjective is the offline learner's objective written out:
// the mean over baskets of log det(L_S + εI), − log det(I + L), and the
// L2 terms α/μᵢ‖vᵢ‖² and β/μᵢ‖bᵢ‖² with μᵢ = max(counts[i], 1).
func regularisedObjective(p *Params, baskets [][]int, eps float64, counts []float64, alpha, beta, power float64) float64 {
	d := p.Dim
	f := directObjective(p, baskets, objSpec{eps: eps})/float64(len(baskets)) + directObjective(p, nil, objSpec{full: true})
	for i := 0; i < p.N; i++ {
		w := math.Pow(math.Max(counts[i], 1), -power)
		f -= alpha * w * blas.Dot(p.V[i*d:(i+1)*d], p.V[i*d:(i+1)*d])
		if p.B != nil {
			f -= beta * w * blas.Dot(p.B[i*d:(i+1)*d], p.B[i*d:(i+1)*d])
		}
	}
	return f
}

func randomBaskets(rng *rand.Rand, n, count, maxK int) [][]int {
	var out [][]int
	for len(out) < count {
		k := 1 + rng.IntN(maxK)
		perm := rng.Perm(n)[:k]
		out = append(out, perm)
	}
	return out
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	specs := []objSpec{
		{eps: 0},
		{eps: 1e-5},
		{eps: 1e-5, restricted: true},
		{eps: 0, full: true},
		{eps: 1e-5, restricted: true, full: true},
	}
	for seed := uint64(1); seed <= 16; seed++ {
		for si, o := range specs {
			shared := seed%2 == 0
			diag := seed > 8
			rng := rand.New(rand.NewPCG(seed, uint64(si)))
			d := 2 + rng.IntN(4)
			n := 6 + rng.IntN(5)
			p, err := NewParams(n, d, shared, seed*31+uint64(si), InitOptions{Scale: 0.5, CScale: 0.5})
			require.NoError(t, err)
			maxK := min(2*d, 5)
			if shared {
				maxK = d // rank L <= d when B = V
			}
			if diag {
				// δ from 0.01 to 10, and baskets beyond the rank bound.
				p.Theta = make([]float64, n)
				for i := range p.Theta {
					p.Theta[i] = math.Log(0.01) + rng.Float64()*math.Log(1000)
				}
				maxK = n - 1
			}
			baskets := randomBaskets(rng, n, 3, maxK)
			name := fmt.Sprintf("seed=%d/spec=%d/shared=%v/diag=%v", seed, si, shared, diag)
			t.Run(name, func(t *testing.T) {
				val, g := analyticGrad(t, p, baskets, o)
				require.InDelta(t, directObjective(p, baskets, o), val, valueTol*math.Max(1, math.Abs(val)))
				fdCheck(t, "V", p, p.V, g.V, baskets, o, fdRelTol)
				if !shared {
					fdCheck(t, "B", p, p.B, g.B, baskets, o, fdRelTol)
				}
				fdCheck(t, "D", p, p.D, g.D, baskets, o, fdRelTol)
				if diag {
					fdCheck(t, "Theta", p, p.Theta, g.T, baskets, o, fdRelTol)
				}
			})
		}
	}
}

// TestGradientsNearSingular checks the basket gradient on nearly singular
// kernels (two almost parallel items) with the ε shift of the numerator.
func TestGradientsNearSingular(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		p, err := NewParams(6, 3, seed%2 == 0, seed, InitOptions{Scale: 0.5, CScale: 0.3})
		require.NoError(t, err)
		d := p.Dim
		// Item 1 ≈ item 0.
		for k := 0; k < d; k++ {
			p.V[d+k] = p.V[k] * (1 + 1e-4*float64(k+1))
			if p.B != nil {
				p.B[d+k] = p.B[k] * (1 - 1e-4*float64(k+1))
			}
		}
		baskets := [][]int{{0, 1}, {0, 1, 2}, {3, 1}}
		o := objSpec{eps: 1e-5, restricted: true}
		_, g := analyticGrad(t, p, baskets, o)
		fdCheck(t, "V", p, p.V, g.V, baskets, o, fdNearSingularTol)
		fdCheck(t, "D", p, p.D, g.D, baskets, o, fdNearSingularTol)
	}
}

// TestPaperFormulasAreWrong documents why the nonsymmetric formulas are
// needed: the paper's 2·V_S·A⁻¹ differs from the true gradient on random
// nonsymmetric kernels, while ours matches finite differences.
func TestPaperFormulasAreWrong(t *testing.T) {
	worst := 0.0
	for seed := uint64(1); seed <= 10; seed++ {
		p, err := NewParams(5, 3, false, seed, InitOptions{Scale: 0.5, CScale: 1})
		require.NoError(t, err)
		items := []int{0, 2, 4}
		_, g := analyticGrad(t, p, [][]int{items}, objSpec{})
		A := directKernel(p, items, 0)
		var ai mat.Dense
		require.NoError(t, ai.Inverse(A))
		d := p.Dim
		// Paper: ∂/∂V_S = 2 V_S A⁻¹ (d×k), column a for item items[a].
		Vs := mat.NewDense(d, 3, nil)
		for a, i := range items {
			for k := 0; k < d; k++ {
				Vs.Set(k, a, p.V[i*d+k])
			}
		}
		var paper mat.Dense
		paper.Mul(Vs, &ai)
		paper.Scale(2, &paper)
		diff, scale := 0.0, 0.0
		for a, i := range items {
			for k := 0; k < d; k++ {
				diff = math.Max(diff, math.Abs(paper.At(k, a)-g.V[i*d+k]))
				scale = math.Max(scale, math.Abs(g.V[i*d+k]))
			}
		}
		worst = math.Max(worst, diff/scale)
	}
	require.Greater(t, worst, paperOffMin)
}

// bcRows writes (row by row, the direct way) bᵢᵀC for the given items into out (len(items)×d).
func bcRows(out []float64, p *Params, c []float64, items []int) {
	d := p.Dim
	b := p.brows()
	for r, i := range items {
		rowTimes(out[r*d:(r+1)*d], b[i*d:(i+1)*d], c, d)
	}
}
