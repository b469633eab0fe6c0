package ndpp

import (
	"math"
	"math/rand/v2"
)

// RandomOptions configures Random.
type RandomOptions struct {
	// Scale is the standard deviation of the entries of V and B
	// (default 1/√d).
	Scale float64
	// CScale is the standard deviation of the entries of D in C = D − Dᵀ
	// (default 1/√d).
	CScale float64
	// Shared makes B = V.
	Shared bool
	// BlockDiagonal uses Gartrell et al.'s C: 2×2 blocks [[0, σ], [−σ, 0]]
	// with σ ~ |N(0, CScale²)| (a trailing odd row/column is zero).
	BlockDiagonal bool
	// Diag, when positive, adds a diagonal D with δᵢ = Diag·e^{N(0,1)}
	// (see WithDiag). It is drawn after V, B and C, so those keep the values
	// they have without it.
	Diag float64
}

// Random returns a model with Gaussian parameters drawn from a PCG stream
// seeded with seed: the same arguments always give the same model. It is for
// tests, benchmarks and synthetic streams.
func Random(n, d int, seed uint64, opt RandomOptions) *Model {
	if n <= 0 || d <= 0 {
		panic("ndpp: Random needs n, d ≥ 1")
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	if opt.Scale == 0 {
		opt.Scale = 1 / math.Sqrt(float64(d))
	}
	if opt.CScale == 0 {
		opt.CScale = 1 / math.Sqrt(float64(d))
	}
	v := make([]float64, n*d)
	for i := range v {
		v[i] = rng.NormFloat64() * opt.Scale
	}
	var b []float64
	if !opt.Shared {
		b = make([]float64, n*d)
		for i := range b {
			b[i] = rng.NormFloat64() * opt.Scale
		}
	}
	c := make([]float64, d*d)
	if opt.BlockDiagonal {
		for j := 0; j+1 < d; j += 2 {
			s := math.Abs(rng.NormFloat64()) * opt.CScale
			c[j*d+j+1], c[(j+1)*d+j] = s, -s
		}
	} else {
		for i := 0; i < d; i++ {
			for j := i + 1; j < d; j++ {
				x := rng.NormFloat64() * opt.CScale
				c[i*d+j], c[j*d+i] = x, -x
			}
		}
	}
	var opts []Option
	if opt.Diag > 0 {
		delta := make([]float64, n)
		for i := range delta {
			delta[i] = opt.Diag * math.Exp(rng.NormFloat64())
		}
		opts = append(opts, WithDiag(delta))
	}
	m, err := build(n, d, v, b, c, opts)
	if err != nil {
		panic("ndpp: Random built an invalid model: " + err.Error())
	}
	return m
}
