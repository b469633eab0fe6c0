package exactnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
)

// randomSkew returns a random d×d skew-symmetric matrix.
func randomSkew(rng *rand.Rand, d int) []float64 {
	c := make([]float64, d*d)
	for r := range d {
		for s := r + 1; s < d; s++ {
			x := rng.NormFloat64()
			c[r*d+s], c[s*d+r] = x, -x
		}
	}
	return c
}

// directNorm computes log det(I + WG), K and ∂/∂C from Z (n×2d rows) by
// the definitions: G = ZᵀZ entry by entry, A = I + WG, A⁻¹ by Gauss–Jordan
// with partial pivoting.
func directNorm(z []float64, n, d int, c []float64) (logDet float64, k, gc []float64) {
	m := 2 * d
	g := make([]float64, m*m)
	for i := range n {
		for r := range m {
			for s := range m {
				g[r*m+s] += z[i*m+r] * z[i*m+s]
			}
		}
	}
	w := make([]float64, m*m) // blockdiag(I, C)
	for r := range d {
		w[r*m+r] = 1
		for s := range d {
			w[(d+r)*m+d+s] = c[r*d+s]
		}
	}
	a := make([]float64, m*m)
	for r := range m {
		for s := range m {
			for t := range m {
				a[r*m+s] += w[r*m+t] * g[t*m+s]
			}
		}
		a[r*m+r]++
	}
	// Gauss–Jordan on [A | I].
	inv := make([]float64, m*m)
	for r := range m {
		inv[r*m+r] = 1
	}
	for col := range m {
		p := col
		for r := col + 1; r < m; r++ {
			if math.Abs(a[r*m+col]) > math.Abs(a[p*m+col]) {
				p = r
			}
		}
		for s := range m {
			a[col*m+s], a[p*m+s] = a[p*m+s], a[col*m+s]
			inv[col*m+s], inv[p*m+s] = inv[p*m+s], inv[col*m+s]
		}
		piv := a[col*m+col]
		logDet += math.Log(math.Abs(piv))
		for s := range m {
			a[col*m+s] /= piv
			inv[col*m+s] /= piv
		}
		for r := range m {
			if r == col {
				continue
			}
			f := a[r*m+col]
			for s := range m {
				a[r*m+s] -= f * a[col*m+s]
				inv[r*m+s] -= f * inv[col*m+s]
			}
		}
	}
	x := make([]float64, m*m) // A⁻¹W
	for r := range m {
		for s := range m {
			for t := range m {
				x[r*m+s] += inv[r*m+t] * w[t*m+s]
			}
		}
	}
	k = make([]float64, m*m)
	for r := range m {
		for s := range m {
			k[r*m+s] = x[r*m+s] + x[s*m+r]
		}
	}
	gc = make([]float64, d*d)
	for r := range d {
		for s := range d {
			for t := range m {
				gc[s*d+r] += g[(d+r)*m+t] * inv[t*m+d+s]
			}
		}
	}
	return logDet, k, gc
}

func requireClose(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	scale := 1.0
	for _, x := range want {
		scale = math.Max(scale, math.Abs(x))
	}
	for i := range want {
		require.InDelta(t, want[i], got[i], tol*scale, "%s entry %d", what, i)
	}
}

// TestWorkMatchesDirect checks Gram and Factor against the definitions.
func TestWorkMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{1, 2, 3, 5, 8} {
		for _, n := range []int{0, 1, 4, 37} {
			m := 2 * d
			w := NewWork(d)
			z := w.Z(n)
			for i := range z {
				z[i] = 0.5 * rng.NormFloat64()
			}
			c := randomSkew(rng, d)
			w.Gram(z, n)
			require.True(t, w.Factor(c))
			ld, k, gc := directNorm(z, n, d, c)
			where := fmt.Sprintf("d=%d n=%d", d, n)
			require.InDelta(t, ld, w.LogDet, 1e-10*math.Max(1, math.Abs(ld)), where)
			requireClose(t, k, w.K, 1e-10, where+": K")
			requireClose(t, gc, w.GC, 1e-10, where+": dC")
			// ApplyAll adds −K zᵢ, split into the V and B halves.
			gv, gb := make([]float64, n*d), make([]float64, n*d)
			w.ApplyAll(n, gv, gb, -1)
			for i := range n {
				for r := range m {
					want := 0.0
					for s := range m {
						want -= k[r*m+s] * z[i*m+s]
					}
					var got float64
					if r < d {
						got = gv[i*d+r]
					} else {
						got = gb[i*d+r-d]
					}
					require.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)), "%s: item %d row %d", where, i, r)
				}
			}
		}
	}
}

// TestPipeSameBits runs the same sequence of snapshots through pipes whose
// jobs are run by the pipe's goroutine and by the caller, with lag 0 and
// with a lag, and checks every result against a fresh Work over the
// snapshot's columns (recomputed: the same bits; updated: within
// rounding), and that results take effect at their positions.
func TestPipeSameBits(t *testing.T) {
	const d, lag, every = 3, 4, 5
	m := 2 * d
	rng := rand.New(rand.NewPCG(7, 8))
	n := 40
	cols := make([]float64, n*m)
	for i := range cols {
		cols[i] = rng.NormFloat64()
	}
	start := append([]float64(nil), cols...)
	type snap struct {
		pos   int64
		items []int
		z1, c []float64
	}
	var snaps []snap
	for pos := int64(1); pos <= 200; pos += every {
		k := 1 + rng.IntN(12)
		items := rng.Perm(n)[:k]
		for _, i := range items {
			for r := range m {
				cols[i*m+r] += 0.1 * rng.NormFloat64()
			}
		}
		z1 := make([]float64, k*m)
		for q, i := range items {
			copy(z1[q*m:], cols[i*m:(i+1)*m])
		}
		snaps = append(snaps, snap{pos, items, z1, randomSkew(rng, d)})
	}
	type result struct {
		k, gc  []float64
		logDet float64
	}
	var refResults []result
	var refState State
	for _, mode := range []string{"caller", "goroutine", "lag 0"} {
		l := lag
		if mode == "lag 0" {
			l = 0
		}
		p := NewPipe(d, l, 7)
		p.SetColumns(n, func(dst []float64, i int) { copy(dst, start[i*m:(i+1)*m]) })
		if mode == "goroutine" {
			p.Start()
		}
		var got []result
		take := func(pos int64) {
			require.True(t, p.Take(pos, nil, nil), mode)
			got = append(got, result{append([]float64(nil), p.K()...), append([]float64(nil), p.GC()...), p.LogDet()})
		}
		for _, s := range snaps {
			for pos := s.pos; pos < s.pos+every; pos++ {
				if pos == s.pos {
					submit(p, pos, s.items, s.z1, s.c)
				}
				if p.Due(pos) {
					require.Equal(t, s.pos+int64(l), pos, "%s: result position", mode)
					take(pos)
				}
			}
		}
		p.Stop()
		require.False(t, p.Running())
		require.Len(t, got, len(snaps), mode)
		st := p.State()
		if mode == "caller" {
			refResults, refState = got, st
		} else {
			// The same jobs in the same order: the same bits, whoever ran
			// them and whenever their results took effect.
			require.Equal(t, refResults, got, mode)
			require.Equal(t, refState.Gram, st.Gram, "%s: G", mode)
		}
		// G tracks the columns of the last snapshot, and the last result
		// is that of a fresh computation over them with the last C.
		w := NewWork(d)
		z := w.Z(n)
		copy(z, cols)
		w.Gram(z, n)
		requireClose(t, w.G, st.Gram, 1e-12, mode+": G tracks the columns")
		require.True(t, w.Factor(snaps[len(snaps)-1].c))
		requireClose(t, w.K, got[len(got)-1].k, 1e-10, mode+": K")
	}
}

// TestPipeRedo makes a pending result fail (FailPending) and checks that
// Take redoes it from the current columns, recomputing G: the result is
// a fresh Work's over them, bit for bit.
func TestPipeRedo(t *testing.T) {
	const d = 2
	m := 2 * d
	rng := rand.New(rand.NewPCG(3, 3))
	n := 9
	cols := make([]float64, n*m)
	for i := range cols {
		cols[i] = rng.NormFloat64()
	}
	z := func(dst []float64, i int) { copy(dst, cols[i*m:(i+1)*m]) }
	p := NewPipe(d, 3, 1000)
	p.SetColumns(n, z)
	c := randomSkew(rng, d)
	submit(p, 1, []int{2}, cols[2*m:3*m], c)
	cols[5*m] += 1 // a column changed since the snapshot
	c2 := randomSkew(rng, d)
	p.FailPending()
	require.True(t, p.Take(4, z, c2))
	w := NewWork(d)
	zz := w.Z(n)
	copy(zz, cols)
	w.Gram(zz, n)
	require.True(t, w.Factor(c2))
	require.Equal(t, w.K, p.K())
	require.Equal(t, w.GC, p.GC())
	require.Equal(t, w.LogDet, p.LogDet())
	require.Equal(t, cols[5*m:6*m], p.Column(5))
	require.Equal(t, int64(0), p.SwapAt())
}

// TestPipeSharedRecomputation waits for jobs that recompute G from scratch
// while the pipe's goroutine runs them, so that the waiting goroutine
// computes units of G too (on the pure-Go backend), and checks every
// result against the same jobs run by the caller alone: the same bits.
func TestPipeSharedRecomputation(t *testing.T) {
	prev := blas.Backend()
	defer func() { _ = blas.Use(prev) }()
	require.NoError(t, blas.Use(blas.Gonum)) // the backend whose Syrk is split
	const d, lag = 30, 3
	m := 2 * d
	rng := rand.New(rand.NewPCG(17, 18))
	n := 6000
	if testing.Short() {
		n = 1500
	}
	cols := make([]float64, n*m)
	for i := range cols {
		cols[i] = 0.1 * rng.NormFloat64()
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	cs := make([][]float64, 12)
	for i := range cs {
		cs[i] = randomSkew(rng, d)
	}
	run := func(goroutine bool) (ks [][]float64, helped int64) {
		p := NewPipe(d, lag, 1)
		p.SetColumns(n, func(dst []float64, i int) { copy(dst, cols[i*m:(i+1)*m]) })
		if goroutine {
			p.Start()
		}
		z := append([]float64(nil), cols...)
		for s, c := range cs {
			pos := int64(1 + s*lag)
			for i := range z {
				z[i] *= 1.01
			}
			submit(p, pos, all, z, c) // every column changed: G anew
			for goroutine && p.claim.Load() == jobPosted {
				time.Sleep(10 * time.Microsecond) // until the goroutine has the job
			}
			require.True(t, p.Due(pos+lag))
			require.True(t, p.Take(pos+lag, nil, nil))
			ks = append(ks, append(append([]float64(nil), p.K()...), p.LogDet()))
		}
		p.Stop()
		return ks, p.helped
	}
	want, _ := run(false)
	var helped int64
	for range 3 {
		got, h := run(true)
		require.Equal(t, want, got)
		helped += h
	}
	require.Positive(t, helped, "the waiting goroutine computed units of G")
}

// submit hands p the snapshot at pos whose changed columns items have the
// values z1 (copied into NextColumns), not run at once.
func submit(p *Pipe, pos int64, items []int, z1, c []float64) {
	copy(p.NextColumns(len(items)), z1)
	p.Submit(pos, items, c, false)
}

// BenchmarkPipeHandoff posts a job (250 changed columns of 2·10⁴, d = 30,
// as at 10⁵ items) every window while the submitting goroutine computes,
// as the learner does between two snapshots (25 baskets, about 0.7 ms),
// and then takes its result. own-% is the share of the jobs the submitting
// goroutine found unstarted and ran itself: the pipe's goroutine, blocked
// between jobs, had not got a core within the window.
func BenchmarkPipeHandoff(b *testing.B) {
	const d, n, k = 30, 20000, 250
	m := 2 * d
	rng := rand.New(rand.NewPCG(1, 2))
	cols := make([]float64, n*m)
	for i := range cols {
		cols[i] = rng.NormFloat64() / 8
	}
	c := randomSkew(rng, d)
	for i := range c {
		c[i] /= 8
	}
	for _, window := range []time.Duration{350 * time.Microsecond, 700 * time.Microsecond, 1400 * time.Microsecond, 2800 * time.Microsecond} {
		b.Run(fmt.Sprintf("window=%v", window), func(b *testing.B) {
			p := NewPipe(d, 1, 1<<40)
			p.SetColumns(n, func(dst []float64, i int) { copy(dst, cols[i*m:(i+1)*m]) })
			p.Start()
			items := make([]int, k)
			x := 1.0
			b.ResetTimer()
			for it := range b.N {
				for r := range items {
					items[r] = rng.IntN(n)
				}
				z1 := p.NextColumns(k)
				for r, i := range items {
					copy(z1[r*m:(r+1)*m], cols[i*m:(i+1)*m])
				}
				pos := int64(1 + it)
				p.Submit(pos, items, c, false)
				for t0 := time.Now(); time.Since(t0) < window; { // the learner's work
					for range 100 {
						x = x*1.0000001 + 1e-9
					}
				}
				if !p.Take(pos+1, nil, nil) {
					b.Fatal("singular A")
				}
			}
			b.StopTimer()
			p.Stop()
			b.ReportMetric(100*float64(p.ranOwn)/float64(b.N), "own-%")
			sinkHandoff = x
		})
	}
}

var sinkHandoff float64
