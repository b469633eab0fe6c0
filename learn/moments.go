package learn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// The moment fit chooses B (n×d rows) and C so that the skew part's
// squared couplings match the co-occurrence cosines,
//
//	(bⱼᵀ C b_y)² ≈ cos(j, y) = c(j, y)/√(c(j) c(y)),
//
// C fixed at d/2 rotation blocks [[0, 1], [−1, 0]], by Adam on
// Σⱼ Σ_y ((bⱼᵀCb_y)² − cos(j, y))² over blocks of rows (docs/math.md,
// "Kernels of the family that rank like co-occurrence"). To first order
// in the couplings a kernel with such a skew part ranks a candidate j
// given Y by δⱼ + Σ_y cos(j, y)/δ_y.

// Defaults of the moment fit (MomentOptions).
const (
	DefaultMomentSteps = 100
	DefaultMomentLR    = 0.01
	DefaultMomentBlock = 1024
	// MomentDenseItems is the largest catalogue whose every column enters
	// each step; beyond it each step samples DefaultMomentColumns of them.
	MomentDenseItems     = 10000
	DefaultMomentColumns = 8192
)

// MomentOptions configures FitMoments. Zero values select the defaults.
type MomentOptions struct {
	Steps int     // Adam steps (default DefaultMomentSteps)
	LR    float64 // Adam's learning rate (default DefaultMomentLR)
	// Block is the number of rows each step fits (default
	// min(n, DefaultMomentBlock)).
	Block int
	// Columns is the number of columns each step samples uniformly when the
	// catalogue has more than MomentDenseItems items (default
	// DefaultMomentColumns): the squared couplings of the pairs that never
	// co-occur enter as an unbiased estimate, those of the pairs that do
	// exactly.
	Columns int
	Seed    uint64
	// MaxMemory is the budget of the fit's arrays in bytes (0: the
	// machine's, see MomentMemory).
	MaxMemory int64
	// Progress, when set, is called after each step with the relative
	// residual of the step's rows, √(Σ((bᵀCb)² − cos)²/Σcos²).
	Progress func(step, steps int, residual float64)
}

func (o MomentOptions) withDefaults(n int) MomentOptions {
	if o.Steps == 0 {
		o.Steps = DefaultMomentSteps
	}
	if o.LR == 0 {
		o.LR = DefaultMomentLR
	}
	if o.Block == 0 {
		o.Block = DefaultMomentBlock
	}
	o.Block = min(o.Block, n)
	if o.Columns == 0 {
		o.Columns = DefaultMomentColumns
	}
	if n <= MomentDenseItems {
		o.Columns = n
	}
	o.Columns = min(o.Columns, n)
	return o
}

// MomentMemory estimates the bytes FitMoments holds for n items, rank d
// and pairs co-occurring pairs with opt: B with its gradient, Adam moments
// and B C (5·n·d), the cosines in both directions (12 bytes a pair each),
// and a step's block of couplings.
func MomentMemory(n, d int, pairs int64, opt MomentOptions) int64 {
	opt = opt.withDefaults(max(n, 1))
	nn, dd := int64(n), int64(d)
	return memlimit.Sum(memlimit.Bytes(nn, dd, 5*8), memlimit.Bytes(pairs, 2*12), memlimit.Bytes(nn, 2*8),
		memlimit.Bytes(int64(opt.Block), int64(opt.Columns), 8), memlimit.Bytes(int64(opt.Block), dd, 3*8))
}

// pairCosines is the co-occurrence cosine matrix in compressed rows: row j
// lists the items y ≠ j that share a counted basket with j and
// cos(j, y) = c(j, y)/√(c(j)c(y)).
type pairCosines struct {
	n     int
	start []int     // n+1 row offsets
	col   []int32   // neighbours
	val   []float64 // cosines
}

// cosinesOf reads the pair counts of co over items [0, n).
func cosinesOf(co *eval.Cooccurrence, n int) *pairCosines {
	pcs := &pairCosines{n: n, start: make([]int, n+1)}
	co.EachPair(func(i, j int, _ int64) bool {
		if j < n {
			pcs.start[i+1]++
			pcs.start[j+1]++
		}
		return true
	})
	for i := 0; i < n; i++ {
		pcs.start[i+1] += pcs.start[i]
	}
	pcs.col = make([]int32, pcs.start[n])
	pcs.val = make([]float64, pcs.start[n])
	fill := append([]int(nil), pcs.start[:n]...)
	co.EachPair(func(i, j int, c int64) bool {
		if j < n {
			v := float64(c) / math.Sqrt(float64(co.ItemCount(i))*float64(co.ItemCount(j)))
			pcs.col[fill[i]], pcs.val[fill[i]] = int32(j), v
			fill[i]++
			pcs.col[fill[j]], pcs.val[fill[j]] = int32(i), v
			fill[j]++
		}
		return true
	})
	return pcs
}

// FitMoments fits B (n×d rows, row-major) and C (d×d) to the pair counts
// of co over items [0, n) (see the package's moment fit above), starting
// from Gaussian rows of the scale that matches the mean cosine. It checks
// ctx between steps and refuses, before allocating, a fit whose memory
// (MomentMemory) exceeds opt.MaxMemory.
func FitMoments(ctx context.Context, co *eval.Cooccurrence, n, d int, opt MomentOptions) (b, c []float64, err error) {
	if n < 1 || d < 2 {
		return nil, nil, fmt.Errorf("learn: moment fit of n = %d items at d = %d; need n ≥ 1, d ≥ 2", n, d)
	}
	opt = opt.withDefaults(n)
	if opt.Steps < 0 || !(opt.LR > 0) || math.IsInf(opt.LR, 0) || opt.Block < 1 || opt.Columns < 1 {
		return nil, nil, fmt.Errorf("learn: invalid moment fit options (steps %d, lr %v, block %d, columns %d)", opt.Steps, opt.LR, opt.Block, opt.Columns)
	}
	budget := memlimit.Given(opt.MaxMemory, "MomentOptions.MaxMemory")
	if err := budget.Check(fmt.Sprintf("a moment fit of %d items at d = %d", n, d), MomentMemory(n, d, int64(co.Pairs()), opt)); err != nil {
		return nil, nil, err
	}
	pcs := cosinesOf(co, n)
	return fitMoments(ctx, pcs, d, opt)
}

// fitMoments is FitMoments on the cosines pcs, with opt's defaults set.
func fitMoments(ctx context.Context, pcs *pairCosines, d int, opt MomentOptions) (b, c []float64, err error) {
	n := pcs.n
	c = make([]float64, d*d)
	for k := 0; k+1 < d; k += 2 {
		c[k*d+k+1], c[(k+1)*d+k] = 1, -1
	}
	// Entries of standard deviation σ give E a² = 2⌊d/2⌋σ⁴: match the mean
	// cosine.
	var tsum float64
	for _, v := range pcs.val {
		tsum += v
	}
	sigma := math.Pow(tsum/float64(n)/float64(n)/float64(d/2*2), 0.25)
	if !(sigma > 0) {
		sigma = 1 / math.Sqrt(float64(d))
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6d6f6d))
	b = make([]float64, n*d)
	for i := range b {
		b[i] = rng.NormFloat64() * sigma
	}
	f := &momentFit{pcs: pcs, d: d, b: b, c: c, cols: opt.Columns,
		bc: make([]float64, n*d), grad: make([]float64, n*d),
		a: make([]float64, opt.Block*opt.Columns), bj: make([]float64, opt.Block*d),
		gj: make([]float64, opt.Block*d), bk: make([]float64, opt.Columns*d), gk: make([]float64, opt.Columns*d)}
	m1, m2 := make([]float64, n*d), make([]float64, n*d)
	rows, cols := make([]int, n), make([]int, n)
	for i := range rows {
		rows[i], cols[i] = i, i
	}
	at := n
	for step := 1; step <= opt.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("learn: moment fit stopped after %d of %d steps: %w", step-1, opt.Steps, err)
		}
		if at+opt.Block > n {
			rng.Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
			at = 0
		}
		block := rows[at : at+opt.Block]
		at += opt.Block
		sample := cols
		if opt.Columns < n {
			// A partial shuffle draws the step's columns.
			for i := 0; i < opt.Columns; i++ {
				j := i + rng.IntN(n-i)
				cols[i], cols[j] = cols[j], cols[i]
			}
			sample = cols[:opt.Columns]
		}
		res, tot := f.gradient(block, sample)
		b1, b2 := 0.9, 0.999
		c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		for i, g := range f.grad {
			m1[i] = b1*m1[i] + (1-b1)*g
			m2[i] = b2*m2[i] + (1-b2)*g*g
			b[i] -= opt.LR * (m1[i] / c1) / (math.Sqrt(m2[i]/c2) + 1e-12)
		}
		if opt.Progress != nil {
			opt.Progress(step, opt.Steps, math.Sqrt(math.Max(res, 0)/math.Max(tot, math.SmallestNonzeroFloat64)))
		}
	}
	return b, c, nil
}

// momentFit holds the moment fit's state and scratch.
type momentFit struct {
	pcs            *pairCosines
	d, cols        int
	b, c, bc, grad []float64
	a              []float64 // block × columns couplings, then their weights
	bj, gj, bk, gk []float64
}

// gradient sets f.grad to the gradient, with respect to B, of
//
//	Σ_{j∈rows} [ (n/|cols|) Σ_{y∈cols} a_jy⁴ + Σ_{y: c(j,y)>0} ((a_jy² − cos)² − a_jy⁴) ],
//
// a_jy = bⱼᵀCb_y (with every column, the loss of the rows exactly; with a
// sample, an unbiased estimate of it), and returns that value and Σ cos²
// over the rows' pairs.
func (f *momentFit) gradient(rows, cols []int) (res, tot float64) {
	n, d := f.pcs.n, f.d
	r, k := len(rows), len(cols)
	scale := float64(n) / float64(k)
	b, c, bc := f.b, f.c, f.bc
	// Rows b_yᵀC of every item; a_jy = bⱼᵀ C b_y = −bⱼ·(b_yᵀC).
	blas.Gemm(gblas.NoTrans, gblas.NoTrans, n, d, d, 1, b, d, c, d, 0, bc, d)
	bj, gj, bk, gk := f.bj[:r*d], f.gj[:r*d], f.bk[:k*d], f.gk[:k*d]
	for q, j := range rows {
		copy(bj[q*d:(q+1)*d], b[j*d:(j+1)*d])
	}
	for q, y := range cols {
		copy(bk[q*d:(q+1)*d], bc[y*d:(y+1)*d])
	}
	a := f.a[:r*k]
	blas.Gemm(gblas.NoTrans, gblas.Trans, r, k, d, -1, bj, d, bk, d, 0, a, k)
	// Weights ∂/∂a of the sampled part, 4(n/|cols|)a³.
	for x, av := range a {
		a2 := av * av
		res += scale * a2 * a2
		a[x] = 4 * scale * a2 * av
	}
	clear(f.grad)
	// ∂/∂bⱼ = Σ_y G_jy C b_y = −(G (BC)_cols)ⱼ; ∂/∂b_y = Σ_j G_jy (bⱼᵀC).
	blas.Gemm(gblas.NoTrans, gblas.NoTrans, r, d, k, -1, a, k, bk, d, 0, gj, d)
	for q, j := range rows {
		blas.Axpy(1, gj[q*d:(q+1)*d], f.grad[j*d:(j+1)*d])
	}
	blas.Gemm(gblas.NoTrans, gblas.NoTrans, r, d, d, 1, bj, d, c, d, 0, gj, d) // rows bⱼᵀC
	blas.Gemm(gblas.Trans, gblas.NoTrans, k, d, r, 1, a, k, gj, d, 0, gk, d)
	for q, y := range cols {
		blas.Axpy(1, gk[q*d:(q+1)*d], f.grad[y*d:(y+1)*d])
	}
	// The co-occurring pairs exactly: ((a² − t)² − a⁴) has weight −4ta.
	pcs := f.pcs
	for q, j := range rows {
		bjr, bjc := b[j*d:(j+1)*d], gj[q*d:(q+1)*d]
		gjr := f.grad[j*d : (j+1)*d]
		for e := pcs.start[j]; e < pcs.start[j+1]; e++ {
			y, t := int(pcs.col[e]), pcs.val[e]
			bcy := bc[y*d : (y+1)*d]
			av := -blas.Dot(bjr, bcy)
			res += t*t - 2*t*av*av
			tot += t * t
			g := -4 * t * av
			blas.Axpy(-g, bcy, gjr)
			blas.Axpy(g, bjc, f.grad[y*d:(y+1)*d])
		}
	}
	return res, tot
}

// momentScales are the scales κ of the fitted couplings that initMoments
// tries.
var momentScales = []float64{1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1, 3, 10}

// initMoments sets p's B and C to the moment fit to the training baskets'
// pairs (OfflineOptions.InitMoments), B at the scale of momentScales with the
// best validation objective (the first scale without validation baskets).
func initMoments(ctx context.Context, p *Params, train, val [][]int, opt OfflineOptions) error {
	n, d := p.N, p.Dim
	co, err := eval.CountCooccurrence(train, n, eval.DefaultCooccurPairs, 0)
	if err != nil {
		return err
	}
	b, c, err := FitMoments(ctx, co, n, d, MomentOptions{Steps: opt.MomentSteps, Seed: opt.Seed})
	if err != nil {
		return err
	}
	for i := range p.D {
		p.D[i] = c[i] / 2 // C = D − Dᵀ
	}
	set := func(kappa float64) {
		f := math.Sqrt(kappa)
		for i := 0; i < n; i++ {
			_, s := p.diag(i)
			for k := 0; k < d; k++ {
				p.B[i*d+k] = f * b[i*d+k] / s
			}
		}
	}
	best, _, err := bestMomentScale(ctx, p, set, train, val, opt)
	if err != nil {
		return err
	}
	set(best)
	return nil
}

// bestMomentScale returns the scale of momentScales whose parameters, as
// set puts them in p, have the best validation objective as
// SelectObjective scores it, and that score (the first scale and −Inf
// without validation baskets).
func bestMomentScale(ctx context.Context, p *Params, set func(kappa float64), train, val [][]int, opt OfflineOptions) (float64, float64, error) {
	best, bestScore := momentScales[0], math.Inf(-1)
	if len(val) == 0 {
		return best, bestScore, nil
	}
	nextW := nextBasketWeight(opt.NextWeight, opt.NextCarry, opt.NextMaxCarry, train)
	for _, kappa := range momentScales {
		set(kappa)
		m, err := p.Model()
		if err != nil {
			continue
		}
		score, err := meanLogLikelihood(ctx, m, val, opt.Eps, opt.Workers)
		if err != nil {
			return 0, 0, err
		}
		if nextW > 0 {
			v, err := nextValuePerBasket(ctx, p, val, opt.NextNegatives, opt.NextBeta, opt.Key, opt.Eps, opt.Seed)
			if err != nil {
				return 0, 0, err
			}
			score += nextW * v
		}
		if score > bestScore {
			best, bestScore = kappa, score
		}
	}
	return best, bestScore, nil
}
