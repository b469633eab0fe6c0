package stream

import (
	"math"
	"slices"

	"github.com/ndpp-go/ndpp/ndpp"
)

// This file holds direct, obviously-correct implementations of the
// algorithms: sets are plain slices (positions replaced in place, as the
// oracle does) and every value is a fresh ndpp.Model.LogDet.

// direct returns log det L_set as a Value (∅ has Log 0).
func direct(m *ndpp.Model, set []int) ndpp.Value {
	if len(set) == 0 {
		return ndpp.Value{}
	}
	ld, sign, err := m.LogDet(set)
	if err != nil {
		panic(err)
	}
	if sign == 0 {
		return ndpp.ZeroValue
	}
	return ndpp.Value{Log: ld}
}

func with(s []int, pos int, item int) []int {
	c := slices.Clone(s)
	c[pos] = item
	return c
}

type refOut struct {
	sol     []int
	swaps   int64
	adds    int64
	stash   []int
	peak    int
	evicted int64
	evals   int64
}

func refPartition(m *ndpp.Model, k int, order []int) refOut {
	n := len(order)
	var out refOut
	part := func(p int) int { return (p*k + n - 1) / n }
	bestItem, have := -1, false
	var bestV ndpp.Value
	for i, t := range order {
		p := i + 1
		v := direct(m, append(slices.Clone(out.sol), t))
		out.evals++
		if !have || v.Greater(bestV) {
			bestItem, bestV, have = t, v, true
		}
		if p == n || part(p+1) != part(p) {
			if !bestV.Zero {
				out.sol = append(out.sol, bestItem)
				out.adds++
			}
			have = false
		}
	}
	return out
}

// refLocal is Online-LSS (useStash), Online-2-neighbor (useStash, pairs) and
// Online-Greedy (alpha = 1, neither).
func refLocal(m *ndpp.Model, k int, order []int, alpha float64, useStash, pairs bool, stashCap int) refOut {
	var out refOut
	la := math.Log(alpha)
	S := []int{}
	var T []int
	push := func(x int) {
		if !useStash {
			return
		}
		T = append(T, x)
		if stashCap > 0 && len(T) > stashCap {
			T = T[1:]
			out.evicted++
		}
		out.peak = max(out.peak, len(T))
	}
	remove := func(x int) {
		if i := slices.Index(T, x); i >= 0 {
			T = slices.Delete(T, i, i+1)
		}
	}
	prev := -1
	for _, t := range order {
		if len(S) < k {
			out.evals++
			if !direct(m, append(slices.Clone(S), t)).Zero {
				S = append(S, t)
				out.adds++
			}
			prev = t
			continue
		}
		fv := direct(m, S)
		bv, bj, pa, pb := ndpp.ZeroValue, -1, -1, -1
		for j := range S {
			out.evals++
			if v := direct(m, with(S, j, t)); bj < 0 || v.Greater(bv) {
				bv, bj = v, j
			}
		}
		if pairs && prev >= 0 && !slices.Contains(S, prev) {
			for a := 0; a < k; a++ {
				for b := a + 1; b < k; b++ {
					set := with(with(S, a, prev), b, t)
					out.evals++
					if v := direct(m, set); v.Greater(bv) {
						bv, pa, pb = v, a, b
					}
				}
			}
		}
		if beats(bv, fv, la) {
			if pa < 0 {
				old := S[bj]
				S[bj] = t
				push(old)
			} else {
				oa, ob := S[pa], S[pb]
				S[pa], S[pb] = prev, t
				remove(prev)
				push(oa)
				push(ob)
			}
			out.swaps++
			for useStash && len(T) > 0 {
				fv := direct(m, S)
				bv := ndpp.ZeroValue
				b1, b2, a1, a2 := -1, -1, -1, -1
				for i, x := range T {
					for a := range S {
						out.evals++
						if v := direct(m, with(S, a, x)); v.Greater(bv) {
							bv, b1, a1 = v, i, a
						}
					}
				}
				if pairs {
					for i := range T {
						for j := i + 1; j < len(T); j++ {
							for a := 0; a < k; a++ {
								for b := a + 1; b < k; b++ {
									out.evals++
									if v := direct(m, with(with(S, a, T[i]), b, T[j])); v.Greater(bv) {
										bv, b1, b2, a1, a2 = v, i, j, a, b
									}
								}
							}
						}
					}
				}
				if b1 < 0 || !beats(bv, fv, la) {
					break
				}
				if b2 < 0 {
					old, in := S[a1], T[b1]
					S[a1] = in
					remove(in)
					push(old)
				} else {
					oa, ob := S[a1], S[a2]
					x, y := T[b1], T[b2]
					S[a1], S[a2] = x, y
					remove(x)
					remove(y)
					push(oa)
					push(ob)
				}
				out.swaps++
			}
		}
		prev = t
	}
	out.sol = S
	out.stash = T
	return out
}

// refGreedy is the offline greedy with a fresh determinant per candidate.
func refGreedy(m *ndpp.Model, k int, cands []int) []int {
	if cands == nil {
		cands = IDOrder(m.N())
	}
	var S []int
	for len(S) < k {
		best, bv := -1, ndpp.ZeroValue
		for _, x := range cands {
			if slices.Contains(S, x) {
				continue
			}
			if v := direct(m, append(slices.Clone(S), x)); v.Greater(bv) {
				best, bv = x, v
			}
		}
		if best < 0 {
			break
		}
		S = append(S, best)
	}
	return S
}
