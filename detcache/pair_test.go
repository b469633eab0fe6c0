package detcache

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// det4Ref is det4 written as a loop over the Laplace pairs: the reference
// its unrolled form must match bit for bit.
func det4Ref(a, mag, e *[16]float64) (det, size, err float64) {
	// Pairs of columns (i, j), i < j, and their complements (k, l), with the
	// Laplace sign (−1)^(1+i+j) (rows 0 and 1, 0-indexed).
	type pc struct {
		i, j, k, l int
		sign       float64
	}
	pairs := [6]pc{
		{0, 1, 2, 3, 1}, {0, 2, 1, 3, -1}, {0, 3, 1, 2, 1},
		{1, 2, 0, 3, 1}, {1, 3, 0, 2, -1}, {2, 3, 0, 1, 1},
	}
	var me [16]float64
	for i := range me {
		me[i] = mag[i] + e[i]
	}
	sizeE := 0.0
	for _, p := range pairs {
		top := a[p.i]*a[4+p.j] - a[p.j]*a[4+p.i]
		bot := a[8+p.k]*a[12+p.l] - a[8+p.l]*a[12+p.k]
		det += p.sign * top * bot
		mt := mag[p.i]*mag[4+p.j] + mag[p.j]*mag[4+p.i]
		mb := mag[8+p.k]*mag[12+p.l] + mag[8+p.l]*mag[12+p.k]
		size += mt * mb
		et := me[p.i]*me[4+p.j] + me[p.j]*me[4+p.i]
		eb := me[8+p.k]*me[12+p.l] + me[8+p.l]*me[12+p.k]
		sizeE += et * eb
	}
	return det, size, (sizeE - size) + 8*eps*size
}

// pairMatrix builds the 4×4 pair matrix, its magnitudes and its entries'
// error bounds as arrays, as the pair determinant was first written.
func pairMatrix(o *Fast, x, y *Cand, a, b int) (mtx, mag, errs [16]float64) {
	o.pairSigma(x, y)
	ld := o.cap
	mtx[0], mtx[1], mtx[2], mtx[3] = o.inv[a*ld+a], o.inv[a*ld+b], x.p[a], y.p[a]
	mtx[4], mtx[5], mtx[6], mtx[7] = o.inv[b*ld+a], o.inv[b*ld+b], x.p[b], y.p[b]
	mtx[8], mtx[9], mtx[10], mtx[11] = -x.q[a], -x.q[b], x.s, x.sxy
	mtx[12], mtx[13], mtx[14], mtx[15] = -y.q[a], -y.q[b], x.syx, y.s
	for i, v := range mtx {
		mag[i] = math.Abs(v)
	}
	mag[10], mag[11], mag[14], mag[15] = x.smag, x.sxyMag, x.syxMag, y.smag
	g, ia, ib := o.gamma, o.izn[a], o.izn[b]
	ge := g * o.einv
	errs = [16]float64{
		ge * ia * ia, ge * ia * ib, g * x.pn * ia, g * y.pn * ia,
		ge * ib * ia, ge * ib * ib, g * x.pn * ib, g * y.pn * ib,
		g * x.qn * ia, g * x.qn * ib, x.serr, x.sxyErr,
		g * y.qn * ia, g * y.qn * ib, x.syxErr, y.serr,
	}
	return mtx, mag, errs
}

// TestPairRatioMatchesLoop: pairRatio returns the results of det4Ref on the
// pair matrix bit for bit (NaNs alike), at every state of random and
// ill-conditioned operation sequences (models without and with a
// diagonal), for every pair of positions (the values themselves are checked
// against fresh LUs by the sequence tests).
func TestPairRatioMatchesLoop(t *testing.T) {
	// Floats equal bit for bit, every NaN alike (a NaN's sign and payload
	// are not observable by the oracle).
	sameBits := cmp.Comparer(func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	})
	compared := 0
	for seed := uint64(1); seed <= 90; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		d := 2 + rng.IntN(6)
		k := 2 + rng.IntN(min(2*d, 10)-1)
		n := k + 10 + rng.IntN(20)
		var m *ndpp.Model
		if seed%2 == 0 {
			m = illModel(t, seed, n, d, int(seed/2)%6)
		} else {
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		}
		if seed > 60 { // with a diagonal, k up to 2d + 2
			scale, partial := ndpptest.DiagCase(seed)
			m = withDiag(t, m, scale, seed, partial)
			k = 2 + rng.IntN(2*d+1)
		}
		o := mustFast(t, m, k)
		r := newOpRun(t, o, seed, logTolIll)
		x, y := o.NewCand(), o.NewCand()
		for step := 0; step < 2*k+6; step++ {
			r.step()
			if o.Direct() || o.Len() < 2 {
				continue
			}
			o.Prepare(x, rng.IntN(n))
			o.Prepare(y, rng.IntN(n))
			if x.dup >= 0 || y.dup >= 0 || x.item == y.item {
				continue
			}
			for a := 0; a < o.Len(); a++ {
				for b := a + 1; b < o.Len(); b++ {
					mtx, mag, errs := pairMatrix(o, x, y, a, b)
					wd, ws, we := det4Ref(&mtx, &mag, &errs)
					gd, gs, ge := o.pairRatio(x, y, a, b)
					require.Empty(t, cmp.Diff([3]float64{wd, ws, we}, [3]float64{gd, gs, ge}, sameBits),
						"seed %d step %d pair (%d, %d): (det, size, err) (-loop +pairRatio)", seed, step, a, b)
					compared++
				}
			}
		}
	}
	require.Greater(t, compared, 1000)
}
