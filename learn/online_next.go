package learn

import (
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/internal/f64"
)

// The online learner's next-item term (OnlineOptions.NextWeight, off by
// default): at each basket of at least two items, the term of the offline
// learner (nextitem.go) on the basket with its last item as given held
// out, against NextNegatives items drawn uniformly from the rows seen so
// far, weighted by NextWeight·|S|. Its gradient moves the basket's rows
// and C, with the basket term's step; the candidates' rows are read, not
// stepped (an item moves when it occurs, as with the basket term), so a
// step stays O(|S|(|S| + NextNegatives)d + NextNegatives·d²).

// onlineNext holds the term's scratch: the basket's and the candidates'
// rows as a small Params (basket positions first), its prepared rows, the
// work and gradient buffers, and the gradient of the basket's rows (gv, gb
// and gt by basket position) for stepItems.
type onlineNext struct {
	lp    Params
	prep  nextPrep
	work  nextWork
	acc   accum
	g     Grad
	rows  []int // the candidates' rows
	local []int // 0…|S|−1, the basket's positions in lp
	negs  []int // |S|…, the candidates' positions in lp
	// The term's gradient for basket position q: rows gv[q·d:], gb[q·d:]
	// (gb unused for B = V), gt[q]; on when set is true.
	gv, gb, gt []float64
	set        bool
	// The candidates' generator, seeded at each basket by the seed and
	// the position.
	pcg rand.PCG
	rng *rand.Rand
}

// nextTerm computes the next-item term's gradient for the basket's rows
// into o.nx (nx.set false when the basket has fewer than two items or a
// determinant is not positive) and adds its share of C's gradient to
// pendC.
func (o *Online) nextTerm(rows []int) {
	nx := o.nx
	nx.set = false
	k, n := len(rows), o.p.N
	if k < 2 || n <= k {
		return
	}
	p, d := o.p, o.p.Dim
	t := k - 1 // the held-out item: the basket's last as given
	nx.pcg.Seed(o.opt.Seed^0x6f6e6e78, uint64(o.pos))
	if nx.rng == nil {
		nx.rng = rand.New(&nx.pcg)
	}
	rng := nx.rng
	nx.rows = nx.rows[:0]
	if j := o.opt.NextNegatives; j >= n-k {
		for r := 0; r < n; r++ {
			if !contains(rows, r) {
				nx.rows = append(nx.rows, r)
			}
		}
	} else {
		for len(nx.rows) < j {
			r := rng.IntN(n)
			if contains(rows, r) || contains(nx.rows, r) {
				continue
			}
			nx.rows = append(nx.rows, r)
		}
	}
	// The small Params over the basket's rows, then the candidates'.
	m := k + len(nx.rows)
	lp := &nx.lp
	lp.N, lp.Dim, lp.D = m, d, p.D
	lp.V = resize(lp.V, m*d)
	if p.B != nil {
		lp.B = resize(lp.B, m*d)
	} else {
		lp.B = nil
	}
	if p.Theta != nil {
		lp.Theta = resize(lp.Theta, m)
	} else {
		lp.Theta = nil
	}
	nx.local, nx.negs = nx.local[:0], nx.negs[:0]
	for a := 0; a < m; a++ {
		r := 0
		if a < k {
			r = rows[a]
			nx.local = append(nx.local, a)
		} else {
			r = nx.rows[a-k]
			nx.negs = append(nx.negs, a)
		}
		copy(lp.V[a*d:(a+1)*d], p.V[r*d:(r+1)*d])
		if p.B != nil {
			copy(lp.B[a*d:(a+1)*d], p.B[r*d:(r+1)*d])
		}
		if p.Theta != nil {
			// log δ at the current position (beginBasket set the basket's
			// rows; the candidates' are computed the same way).
			lp.Theta[a] = math.Log(o.odds(r)) + o.phi(r)
		}
	}
	nx.prep.prepare(lp, o.c, o.opt.Eps, nil)
	nx.acc.reset() // the rows the last basket touched, at its size
	nx.acc.resize(m, d)
	w := o.opt.NextWeight * float64(k)
	if _, ok := nx.work.term(&nx.prep, lp, nx.local, t, nx.negs, o.opt.NextBeta, &nx.acc, w); !ok {
		return
	}
	g := &nx.g
	g.V = resize(g.V, m*d)
	clear(g.V)
	if lp.B != nil {
		g.B = resize(g.B, m*d)
		clear(g.B)
	} else {
		g.B = nil
	}
	if lp.Theta != nil {
		g.T = resize(g.T, m)
		clear(g.T)
	} else {
		g.T = nil
	}
	nx.acc.finish(lp, o.c, g, false)
	// The candidates' rows are not stepped; the basket's are, in stepItems.
	nx.gv = append(nx.gv[:0], g.V[:k*d]...)
	if g.B != nil {
		nx.gb = append(nx.gb[:0], g.B[:k*d]...)
	}
	if g.T != nil {
		nx.gt = append(nx.gt[:0], g.T[:k]...)
	}
	f64.AxpyUnitary(1, nx.acc.gc, o.pendC)
	nx.set = true
}
