package detcache

import (
	"errors"
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/ndpp"
)

// checkCapacity validates the constructor arguments shared by NewNaive and
// NewFast.
func checkCapacity(m *ndpp.Model, capacity int) error {
	if m == nil {
		return errors.New("detcache: nil model")
	}
	switch {
	case capacity < 1:
		return fmt.Errorf("detcache: capacity %d; need at least 1", capacity)
	case capacity > m.N():
		return fmt.Errorf("detcache: capacity %d exceeds the number of items n = %d", capacity, m.N())
	case capacity > m.MaxRank():
		return fmt.Errorf("detcache: capacity %d exceeds %s", capacity, rankBoundText(m))
	}
	return nil
}

// rankBoundText describes m.MaxRank() below n for messages: the rank bound
// of a model without a diagonal.
func rankBoundText(m *ndpp.Model) string {
	if m.Shared() {
		return fmt.Sprintf("d = %d, the rank of a model with B = V and no diagonal (every larger set has determinant zero)", m.D())
	}
	return fmt.Sprintf("2d = %d, the rank of a model without a diagonal (every larger set has determinant zero)", 2*m.D())
}

// ErrFull is returned by Add when S already holds Cap() items.
var ErrFull = errors.New("detcache: solution is full")

// positionOf returns the position of item in items, or -1.
func positionOf(items []int, item int) int {
	for p, it := range items {
		if it == item {
			return p
		}
	}
	return -1
}

// hasDup reports whether items has a repeated entry, O(k²).
func hasDup(items []int) bool {
	for a := 1; a < len(items); a++ {
		for b := 0; b < a; b++ {
			if items[a] == items[b] {
				return true
			}
		}
	}
	return false
}

// checkCand panics for a programmer error: a Cand that was never prepared or
// belongs to another oracle.
func checkCand(o Oracle, c *Cand) {
	if c == nil {
		panic("detcache: nil Cand")
	}
	if c.owner != o {
		if c.owner == nil {
			panic("detcache: Cand was not prepared (call Prepare)")
		}
		panic("detcache: Cand was prepared by another oracle")
	}
}

// checkItem panics for an item index outside [0, n): items reaching an
// oracle are validated by the caller (stream ids are checked on input).
func checkItem(m *ndpp.Model, item int) {
	if item < 0 || item >= m.N() {
		panic(fmt.Sprintf("detcache: item %d out of range [0, %d)", item, m.N()))
	}
}

// checkPair validates the positions of a pair swap.
func checkPair(a, b, k int) error {
	if a < 0 || a >= k || b < 0 || b >= k {
		return fmt.Errorf("detcache: pair swap positions (%d, %d) out of range [0, %d)", a, b, k)
	}
	if a == b {
		return fmt.Errorf("detcache: pair swap positions are equal (%d)", a)
	}
	return nil
}

// rowsValue computes the value of the set of the given rows (distinct
// items) with a fresh LU, as ndpp.Model.LogDet does for a model's items
// (the same kernel entries, and its equilibrated log-determinant,
// ndpp.LogDetEquilibrated), in buf (grown to k² + k when shorter, and
// returned). A set larger than maxRank is zero, and so is one whose values
// overflow float64 (unreachable for items that pass ndpp.CheckItem).
func rowsValue(rows []row, maxRank int, diag bool, buf []float64) (ndpp.Value, []float64) {
	k := len(rows)
	if k == 0 {
		return ndpp.Value{}, buf
	}
	if k > maxRank {
		return ndpp.ZeroValue, buf
	}
	if cap(buf) < k*k+k {
		buf = make([]float64, k*k+k)
	}
	a, norm2 := buf[:k*k], buf[k*k:k*k+k]
	for i, ri := range rows {
		r := a[i*k : (i+1)*k]
		for j, rj := range rows {
			r[j] = entryRows(ri, rj, i == j && diag)
		}
		norm2[i] = ri.norm2()
	}
	ld, sign, ok := ndpp.LogDetEquilibrated(a, norm2, k)
	if !ok || sign == 0 {
		return ndpp.ZeroValue, buf
	}
	return ndpp.Value{Log: ld}, buf
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
