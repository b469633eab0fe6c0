package learn

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/ndpp"
)

// DefaultCondNegatives is the number of sampled candidates of the
// next-item term (OfflineOptions.CondWeight) when CondNegatives is 0.
const DefaultCondNegatives = 32

// condChoice draws the next-item term's held-out position t in the basket
// s and its negatives: k distinct items of [0, n) outside s, uniformly (as
// many as there are when fewer). The draw depends only on the seed, the
// step and the basket's place in the minibatch, not on the workers.
func condChoice(seed uint64, step, idx int, s []int, n, k int, negs []int) (int, []int) {
	rng := rand.New(rand.NewPCG(seed^0xc0dd17e7, uint64(step)<<32|uint64(uint32(idx))))
	t := rng.IntN(len(s))
	k = min(k, n-len(s))
	negs = negs[:0]
	for len(negs) < k {
		j := rng.IntN(n)
		if contains(s, j) || contains(negs, j) {
			continue
		}
		negs = append(negs, j)
	}
	return t, negs
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// condWork is a worker's scratch for the next-item term.
type condWork struct {
	items []int
	bcS   []float64
	vals  []float64
	negs  []int
}

// condTerm evaluates the sampled next-item term of a basket s with item
// s[t] held out and the rest Y as the conditioning set,
//
//	log g_t(Y) − log Σ_{c ∈ {t} ∪ negs} g_c(Y),   g_c(Y) = det(L_{Y+c} + εI)/det(L_Y + εI),
//
// a softmax over the held-out item and the sampled candidates of the
// conditional gains that the paper protocol ranks by (det L_Y cancels, so
// each candidate costs one determinant of |S| items), and adds scale·∂ of
// it into acc (and scale times its value into acc.value). bc holds every
// item's row bᵢᵀC. It returns the value, or −Inf (acc unchanged) when the
// held-out item's determinant is not positive.
func (w *basketWork) condTerm(cw *condWork, p *Params, bc []float64, s []int, t int, negs []int, eps float64, acc *accum, scale float64) float64 {
	d := p.Dim
	k := len(s)
	cw.items = append(cw.items[:0], s[:t]...)
	cw.items = append(cw.items, s[t+1:]...)
	cw.items = append(cw.items, s[t])
	cw.bcS = resize(cw.bcS, k*d)
	for r, i := range cw.items[:k-1] {
		copy(cw.bcS[r*d:(r+1)*d], bc[i*d:(i+1)*d])
	}
	cand := func(q int) int {
		if q == 0 {
			return s[t]
		}
		return negs[q-1]
	}
	set := func(c int) {
		cw.items[k-1] = c
		copy(cw.bcS[(k-1)*d:k*d], bc[c*d:(c+1)*d])
	}
	nc := 1 + len(negs)
	cw.vals = resize(cw.vals, nc)
	mx := math.Inf(-1)
	for q := 0; q < nc; q++ {
		set(cand(q))
		v, ok := w.pieces(p, cw.items, cw.bcS, nil, eps, false, true, false)
		if !ok {
			v = math.Inf(-1)
		}
		cw.vals[q] = v
		mx = math.Max(mx, v)
	}
	if math.IsInf(cw.vals[0], -1) {
		return math.Inf(-1)
	}
	sum := 0.0
	for _, v := range cw.vals {
		sum += math.Exp(v - mx)
	}
	lse := mx + math.Log(sum)
	for q := 0; q < nc; q++ {
		pq := math.Exp(cw.vals[q] - lse)
		wgt := -pq
		if q == 0 {
			wgt += 1
		}
		if wgt == 0 || math.IsInf(cw.vals[q], -1) {
			continue
		}
		set(cand(q))
		w.basketTerm(p, cw.bcS, cw.items, eps, false, false, acc, scale*wgt)
	}
	val := cw.vals[0] - lse
	acc.value += scale * val
	return val
}

// condValStep is the step condChoice draws the validation baskets' terms
// with (training steps count from 0, far below it).
const condValStep = math.MaxInt32

// meanCondValue is the mean next-item term of condTerm over the baskets of
// val with at least two items, under the model m, with draws fixed for
// the run (condValStep); 0 when there is none. It checks ctx as
// eval.LogDetsEps does.
func meanCondValue(ctx context.Context, m *ndpp.Model, val [][]int, opt OfflineOptions) (float64, error) {
	var sets [][]int
	var nc []int
	var negs []int
	for q, s := range val {
		if len(s) < 2 {
			continue
		}
		t, ng := condChoice(opt.Seed, condValStep, q, s, m.N(), opt.CondNegatives, negs)
		negs = ng
		y := make([]int, 0, len(s)-1)
		y = append(y, s[:t]...)
		y = append(y, s[t+1:]...)
		for c := -1; c < len(ng); c++ {
			j := s[t]
			if c >= 0 {
				j = ng[c]
			}
			sets = append(sets, append(y[:len(y):len(y)], j))
		}
		nc = append(nc, 1+len(ng))
	}
	if len(nc) == 0 {
		return 0, nil
	}
	lds, err := eval.LogDetsEps(ctx, m, sets, opt.Eps, opt.Workers)
	if err != nil {
		return 0, err
	}
	sum, at := 0.0, 0
	for _, k := range nc {
		vals := lds[at : at+k]
		at += k
		mx := math.Inf(-1)
		for _, v := range vals {
			mx = math.Max(mx, v)
		}
		e := 0.0
		for _, v := range vals {
			e += math.Exp(v - mx)
		}
		sum += vals[0] - mx - math.Log(e)
	}
	return sum / float64(len(nc)), nil
}
