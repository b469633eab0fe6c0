package learn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdamCoefMatchesPow(t *testing.T) {
	for _, tt := range []int64{1, 2, 3, 17, adamTableLen - 1, adamTableLen, adamTableLen + 1, 1 << 20} {
		c1 := 1 - math.Pow(adamBeta1, float64(tt))
		c2 := 1 - math.Pow(adamBeta2, float64(tt))
		st, eps := adamCoef(0.01, tt)
		require.Equal(t, 0.01*math.Sqrt(c2)/c1, st, "t = %d", tt)
		require.Equal(t, adamEps*math.Sqrt(c2), eps, "t = %d", tt)
	}
}

// TestCoefLookup checks the table of Adam's coefficients (coefLookup)
// against adamCoef over step counts below, at and far above adamSettled,
// asked for in any order.
func TestCoefLookup(t *testing.T) {
	require.Less(t, adamSettled, int64(1<<17), "a table of reasonable size")
	var tab []float64
	ts := []int64{1, 5, 2, adamTableLen - 1, adamTableLen, adamSettled - 1, adamSettled, adamSettled + 1, 3, 1 << 20, 1 << 40}
	for s := int64(adamSettled - 1000); s < adamSettled+200000; s += 97 {
		ts = append(ts, s)
	}
	for _, lr := range []float64{0.006, 0.01} {
		tab = tab[:0]
		for _, tt := range ts {
			st, eps := adamCoef(lr, tt)
			gs, ge := coefLookup(&tab, lr, tt)
			require.Equal(t, st, gs, "lr %g, t = %d", lr, tt)
			require.Equal(t, eps, ge, "lr %g, t = %d", lr, tt)
		}
	}
}

func TestAdamApplyIsAdamStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 17))
	for n := 1; n <= 37; n++ {
		for tt := 1; tt <= 3; tt++ {
			mk := func() []float64 {
				s := make([]float64, n)
				for i := range s {
					s[i] = rng.NormFloat64()
				}
				return s
			}
			x, m, g := mk(), mk(), mk()
			v := make([]float64, n)
			for i := range v {
				v[i] = math.Abs(rng.NormFloat64())
			}
			x2, m2, v2 := append([]float64(nil), x...), append([]float64(nil), m...), append([]float64(nil), v...)
			adamStep(x2, m2, v2, g, 0.01, tt)
			st, eps := adamCoef(0.01, int64(tt))
			sum := adamApply(x, m, v, g, st, eps)
			require.Equal(t, x2, x, "n %d", n)
			require.Equal(t, m2, m)
			require.Equal(t, v2, v)
			want, mag := 0.0, 0.0
			for _, xi := range x2 {
				want += xi
				mag += math.Abs(xi)
			}
			require.InDelta(t, want, sum, float64(n+1)*0x1p-52*mag)
		}
	}
}
