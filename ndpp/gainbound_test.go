package ndpp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// gainBound is zⱼᵀ S⁻¹ zⱼ with zᵢ = [vᵢ; bᵢ] and S = diag(I_d, 0) +
// Σ_{y∈Y} z_y z_yᵀ/δ_y, by a fresh LU (ok is false when S is singular).
func gainBound(m *Model, y []int, j int) (bound float64, ok bool) {
	d := m.D()
	z := func(i int) []float64 { return append(append([]float64(nil), m.ItemV(i)...), m.ItemB(i)...) }
	s := mat.NewDense(2*d, 2*d, nil)
	for a := 0; a < d; a++ {
		s.Set(a, a, 1)
	}
	for _, i := range y {
		zi, w := z(i), 1/m.ItemDiag(i)
		for a := range zi {
			for b := range zi {
				s.Set(a, b, s.At(a, b)+w*zi[a]*zi[b])
			}
		}
	}
	var lu mat.LU
	lu.Factorize(s)
	if lu.Cond() > 1e12 {
		return 0, false
	}
	zj := mat.NewVecDense(2*d, z(j))
	var x mat.VecDense
	if err := lu.SolveVecTo(&x, false, zj); err != nil {
		return 0, false
	}
	return mat.Dot(zj, &x), true
}

// TestConditionalGainBound checks the bound of docs/math.md ("What a
// conditional gain can express"): for every kernel L = D + VᵀV + BᵀCB with
// δ_y > 0 on Y, the gain of item j beyond its own rate is at most a
// leverage against Y's embeddings,
//
//	det L_{Y+j}/det L_Y − δⱼ ≤ zⱼᵀ (diag(I, 0) + Σ_{y∈Y} z_y z_yᵀ/δ_y)⁻¹ zⱼ,
//
// whatever C is, and the bound can only fall as Y grows. The gains come
// from ConditionalGains and from determinants by a fresh LU; the models are
// random, with B = V or not, Gartrell et al.'s block C or a general skew
// C, and near-singular ones (tiny δ, a C near zero, large embeddings).
func TestConditionalGainBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	checked := 0
	for trial := 0; trial < 120; trial++ {
		d := 1 + rng.IntN(4)
		n := 3*d + 4 + rng.IntN(6)
		opt := RandomOptions{Shared: trial%4 == 0, BlockDiagonal: trial%3 == 0, Diag: 0.3}
		switch trial % 5 {
		case 1:
			opt.Diag = 1e-4
		case 2:
			opt.CScale = 1e-7
		case 3:
			opt.Scale = 10
		}
		m := Random(n, d, uint64(100+trial), opt)
		perm := rng.Perm(n)
		k := d + 1 + rng.IntN(n-d-2) // |Y| > d: Y's b-vectors span R^d
		y, rest := perm[:k], perm[k:]
		gains := make([]float64, n)
		if err := m.ConditionalGains(y, gains); err != nil {
			continue // det L_Y is zero to rounding
		}
		base := directLogDet(m, y)
		for _, j := range rest {
			bound, ok := gainBound(m, y, j)
			if !ok {
				continue
			}
			direct := math.Exp(directLogDet(m, append(append([]int(nil), y...), j)) - base)
			tol := 1e-7 * math.Max(1, math.Max(math.Abs(bound), gains[j]))
			require.LessOrEqual(t, gains[j]-m.ItemDiag(j), bound+tol, "trial %d j %d: fast path", trial, j)
			require.LessOrEqual(t, direct-m.ItemDiag(j), bound+tol, "trial %d j %d: fresh LU", trial, j)
			// One more item of evidence can only lower the bound.
			more, ok := gainBound(m, append(append([]int(nil), y...), rest[0]), j)
			if ok && j != rest[0] {
				require.LessOrEqual(t, more, bound+tol, "trial %d j %d: bound grew with Y", trial, j)
			}
			checked++
		}
	}
	require.Greater(t, checked, 500)
}
