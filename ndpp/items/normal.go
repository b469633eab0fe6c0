package items

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// normals draws the normal deviates of math/rand/v2's Rand.NormFloat64
// over a rand.PCG, bit for bit and step for step, faster: the generator's
// step and the ziggurat's common case (better than 99% of the draws) are
// inlined, with the ziggurat's tables read from NormFloat64 itself at
// start-up (normalTables). A draw the common case rejects is rewound and
// redrawn by NormFloat64 with the normals as its source, so that the rare
// paths are the standard library's own.
type normals struct{ hi, lo uint64 } // rand.PCG's state

// newNormals returns the stream of rand.New(rand.NewPCG(seed1, seed2)).
func newNormals(seed1, seed2 uint64) normals { return normals{seed1, seed2} }

// Uint64 is rand.PCG's Uint64 (so that a rand.Rand can draw from the
// stream: the rare paths).
func (s *normals) Uint64() uint64 {
	var u uint64
	s.hi, s.lo, u = pcgStep(s.hi, s.lo)
	return u
}

// pcgStep is one step of rand.PCG from the state (hi, lo): the next state
// and the output. Loops that keep the state in local variables (in
// registers) step it with pcgStep, not through a *normals.
func pcgStep(hi, lo uint64) (nhi, nlo, out uint64) {
	// rand.PCG: state = state·mul + inc (128 bits), then the DXSM output.
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	out = h ^ h>>32
	out *= cheapMul
	out ^= out >> 48
	out *= l | 1
	return h, l, out
}

// norm returns the next NormFloat64; r is a rand.Rand drawing from s (for
// the rare paths).
func (s *normals) norm(r *rand.Rand) float64 {
	st := *s
	u := s.Uint64()
	j := int32(u)
	i := u >> 32 & 0x7F
	if absInt32(j) < zigK[i] {
		return float64(j) * zigW[i]
	}
	return s.redraw(st, r)
}

// redraw rewinds s to st and draws the normal with NormFloat64 (r draws
// from s).
//
//go:noinline
func (s *normals) redraw(st normals, r *rand.Rand) float64 {
	*s = st
	return r.NormFloat64()
}

// skip draws and discards k normals (r draws from s), the state in local
// variables between the rare paths.
func (s *normals) skip(k int, r *rand.Rand) {
	hi, lo := s.hi, s.lo
	for ; k > 0; k-- {
		nhi, nlo, u := pcgStep(hi, lo)
		if absInt32(int32(u)) < zigK[u>>32&0x7F] {
			hi, lo = nhi, nlo
			continue
		}
		s.hi, s.lo = hi, lo
		r.NormFloat64()
		hi, lo = s.hi, s.lo
	}
	s.hi, s.lo = hi, lo
}

func absInt32(i int32) uint32 {
	if i < 0 {
		return uint32(-i)
	}
	return uint32(i)
}

// zigK and zigW are NormFloat64's ziggurat tables kn and wn (wn as
// float64): a draw u is accepted at once when |int32(u)| < kn[i], i =
// u>>32 & 0x7F, and is then int32(u)·wn[i] (where only j = 0 is accepted,
// wn is not read and zigW is 1).
var zigK, zigW = normalTables()

// normalTables reads kn and wn from NormFloat64 by feeding it chosen
// values: with j = 1 it returns wn[i] (kn[i] > 1 for every strip), and kn[i]
// is the least |j| it does not accept at once (it then asks for more
// values), found by bisection. The tables and the algorithm are checked
// against NormFloat64 by the tests.
func normalTables() (k [128]uint32, w [128]float64) {
	src := &probe{}
	r := rand.New(src)
	draw := func(i uint64, a uint32) (x float64, accepted bool) {
		j := int32(a)
		if a == 1<<31 {
			j = math.MinInt32
		}
		src.first, src.calls = i<<32|uint64(uint32(j)), 0
		x = r.NormFloat64()
		return x, src.calls == 1
	}
	for i := range uint64(128) {
		x, ok := draw(i, 1)
		if !ok {
			// A strip that accepts at most j = 0 at once (or none: kn = 0),
			// whose accepted draws are 0 whatever wn is.
			if _, ok := draw(i, 0); ok {
				k[i], w[i] = 1, 1
			}
			continue
		}
		w[i] = x
		if _, ok := draw(i, 1<<31); ok {
			k[i] = math.MaxUint32 // every |j| ≤ 2³¹
			continue
		}
		lo, hi := uint32(1), uint32(1<<31) // accepted at lo, not at hi
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if _, ok := draw(i, mid); ok {
				lo = mid
			} else {
				hi = mid
			}
		}
		k[i] = hi
	}
	return k, w
}

// probe is a rand.Source that returns first, then values that end any
// draw at once (Float64 ≈ 1 for the tails and wedges, then an accepted
// value), counting the calls.
type probe struct {
	first uint64
	calls int
}

func (p *probe) Uint64() uint64 {
	p.calls++
	if p.calls == 1 {
		return p.first
	}
	return ^uint64(0)
}

// fill writes the next draws of s times scale to the first d entries of
// each row of rows (rows of w ≥ d values, len(rows) a multiple of w); r
// draws from s (the rare paths).
func (s *normals) fill(rows []float64, d, w int, scale float64, r *rand.Rand) {
	hi, lo := s.hi, s.lo
	for p := 0; p+w <= len(rows); p += w {
		row := rows[p : p+d : p+d]
		for q := range row {
			nhi, nlo, u := pcgStep(hi, lo)
			j, i := int32(u), u>>32&0x7F
			if absInt32(j) < zigK[i] {
				row[q] = float64(j) * zigW[i] * scale
				hi, lo = nhi, nlo
				continue
			}
			s.hi, s.lo = hi, lo
			row[q] = r.NormFloat64() * scale
			hi, lo = s.hi, s.lo
		}
	}
	s.hi, s.lo = hi, lo
}

// fillPair is fill over two streams at once: the draws of a go to the
// first d entries of each row, those of b to the next d (w ≥ 2d). The two
// independent chains of steps overlap in the processor.
func fillPair(a, b *normals, rows []float64, d, w int, scale float64, ra, rb *rand.Rand) {
	ha, la, hb, lb := a.hi, a.lo, b.hi, b.lo
	for p := 0; p+w <= len(rows); p += w {
		va := rows[p : p+d : p+d]
		vb := rows[p+d : p+2*d : p+2*d]
		for q := range va {
			nha, nla, ua := pcgStep(ha, la)
			nhb, nlb, ub := pcgStep(hb, lb)
			ja, ia := int32(ua), ua>>32&0x7F
			jb, ib := int32(ub), ub>>32&0x7F
			if absInt32(ja) < zigK[ia] {
				va[q] = float64(ja) * zigW[ia] * scale
				ha, la = nha, nla
			} else {
				a.hi, a.lo = ha, la
				va[q] = ra.NormFloat64() * scale
				ha, la = a.hi, a.lo
			}
			if absInt32(jb) < zigK[ib] {
				vb[q] = float64(jb) * zigW[ib] * scale
				hb, lb = nhb, nlb
			} else {
				b.hi, b.lo = hb, lb
				vb[q] = rb.NormFloat64() * scale
				hb, lb = b.hi, b.lo
			}
		}
	}
	a.hi, a.lo, b.hi, b.lo = ha, la, hb, lb
}
