package learn

import "math"

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
