package learn

import (
	"math"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// Optimizer names the update rule of the learners.
type Optimizer int

const (
	// Adam is Kingma & Ba's method with bias correction (the default).
	Adam Optimizer = iota
	// SGD is plain gradient ascent with a fixed learning rate.
	SGD
)

// String returns "adam" or "sgd".
func (o Optimizer) String() string {
	switch o {
	case Adam:
		return "adam"
	case SGD:
		return "sgd"
	}
	return "unknown"
}

// ParseOptimizer maps "adam" and "sgd" to an Optimizer.
func ParseOptimizer(s string) (Optimizer, bool) {
	switch s {
	case "adam":
		return Adam, true
	case "sgd":
		return SGD, true
	}
	return 0, false
}

// Adam's moment decay rates and the denominator's ε.
const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// adamStepRows is adamStep on rows of length d whose step sizes are
// scaled, row i by f[i] (f nil: adamStep).
// It runs on f64.Adam with the coefficients computed once (adamApply: the
// same results as adamStep).
func adamStepRows(x, m, v, g []float64, lr float64, t, d int, f []float64) {
	step, eps := adamCoef(lr, int64(t))
	if f == nil {
		adamApply(x, m, v, g, step, eps)
		return
	}
	for i, fi := range f {
		r := i * d
		adamApply(x[r:r+d], m[r:r+d], v[r:r+d], g[r:r+d], step*fi, eps)
	}
}

// adamStep performs one ascent step x += lr·m̂/(√v̂ + ε) on a block with
// step count t (≥ 1) and gradient g.
func adamStep(x, m, v, g []float64, lr float64, t int) {
	c1 := 1 - math.Pow(adamBeta1, float64(t))
	c2 := 1 - math.Pow(adamBeta2, float64(t))
	step := lr * math.Sqrt(c2) / c1
	for i, gi := range g {
		// Explicit conversions: no fused multiply-adds (as f64.Adam).
		mi := float64(adamBeta1*m[i]) + float64((1-adamBeta1)*gi)
		vi := float64(adamBeta2*v[i]) + float64((1-adamBeta2)*gi*gi)
		m[i], v[i] = mi, vi
		x[i] += float64(step*mi) / (math.Sqrt(vi) + adamEps*math.Sqrt(c2))
	}
}

// adamCoef returns the bias-corrected step size and denominator ε of
// adamStep for step count t (≥ 1), so that blocks sharing t share them. The
// powers βᵗ come from a table for small t (the same math.Pow values, computed
// once).
func adamCoef(lr float64, t int64) (step, eps float64) {
	var p1, p2 float64
	if t < adamTableLen {
		p1, p2 = adamPow1[t], adamPow2[t]
	} else {
		p1, p2 = math.Pow(adamBeta1, float64(t)), math.Pow(adamBeta2, float64(t))
	}
	c1 := 1 - p1
	sc2 := math.Sqrt(1 - p2)
	return lr * sc2 / c1, adamEps * sc2
}

// adamCoef returns adamCoef(o.opt.LR, t) from o.coef (the same values).
func (o *Online) adamCoef(t int64) (step, eps float64) {
	return coefLookup(&o.coef, o.opt.LR, t)
}

// coefLookup returns adamCoef(lr, t) from the table *tab of adamCoef(lr,
// t) for t = 0, 1, … (grown as larger t are asked for) up to adamSettled,
// whose value is that of every larger t: a lookup instead of a square
// root and a division (and, from adamTableLen on, two math.Pow) per item
// and basket. The table of one lr is at most 2·adamSettled values.
func coefLookup(tab *[]float64, lr float64, t int64) (step, eps float64) {
	t = min(t, adamSettled)
	c := *tab
	for int64(len(c)) <= 2*t {
		st, ep := adamCoef(lr, int64(len(c)/2))
		c = append(c, st, ep)
	}
	*tab = c
	return c[2*t], c[2*t+1]
}

// adamSettled is the first step count t at which math.Pow gives β₁ᵗ and
// β₂ᵗ at most 2⁻⁶⁰. For every larger t the computed powers stay at most
// 2⁻⁵⁴ (the exact ones keep falling, and math.Pow is accurate to far
// better than the factor 2⁶ of margin), so 1 − βᵗ rounds to 1 in both, and
// adamCoef(lr, t) = adamCoef(lr, adamSettled) bit for bit.
var adamSettled = func() int64 {
	t := int64(1)
	for math.Pow(adamBeta1, float64(t)) > 0x1p-60 || math.Pow(adamBeta2, float64(t)) > 0x1p-60 {
		t++
	}
	return t
}()

// adamTableLen bounds the step counts whose powers are tabulated.
const adamTableLen = 4096

// adamPow1[t] = β₁ᵗ, adamPow2[t] = β₂ᵗ (math.Pow).
var adamPow1, adamPow2 = func() (p1, p2 []float64) {
	p1, p2 = make([]float64, adamTableLen), make([]float64, adamTableLen)
	for t := range p1 {
		p1[t], p2[t] = math.Pow(adamBeta1, float64(t)), math.Pow(adamBeta2, float64(t))
	}
	return p1, p2
}()

// adamApply is adamStep with precomputed coefficients (adamCoef), by
// f64.Adam (the same operations, so the same results). It returns the sum
// of the new x, which is finite exactly when no entry overflowed or became
// NaN (up to overflow of the sum itself, itself a divergence).
func adamApply(x, m, v, g []float64, step, eps float64) float64 {
	c := f64.AdamCoef{Beta1: adamBeta1, Beta1c: 1 - adamBeta1, Beta2: adamBeta2, Beta2c: 1 - adamBeta2, Step: step, Eps: eps}
	return f64.Adam(x, m, v, g, &c)
}

// sgdApply performs x += lr·g and returns the sum of the new x (see
// adamApply).
func sgdApply(x, g []float64, lr float64) float64 {
	x = x[:len(g)]
	s := 0.0
	for i, gi := range g {
		xi := x[i] + float64(lr*gi) // not fused, as f64.Adam
		x[i] = xi
		s += xi
	}
	return s
}
