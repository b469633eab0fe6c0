package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/ndpp-go/ndpp/ndpp"
)

// MaxExactSubsets bounds the number of k-subsets ExactMAP enumerates.
const MaxExactSubsets = 5_000_000

// exactCheck is the number of subsets ExactMAP evaluates between two
// checks of its context (each costs a fresh determinant, O(k²d + k³)).
const exactCheck = 64

// ExactMAP returns a maximiser of det L_S over the k-subsets of items (nil =
// all n items) by enumeration, each determinant computed afresh by
// ndpp.Model.LogDet. Subsets are visited in lexicographic order of candidate
// positions and the first maximiser is kept. When every k-subset has
// determinant zero the solution is nil and the Value zero. It is for tests
// and approximation ratios on small n: more than MaxExactSubsets subsets is
// an error. Once ctx is done it stops (ctx is checked every exactCheck
// subsets) and returns an error wrapping ctx.Err().
func ExactMAP(ctx context.Context, m *ndpp.Model, k int, items []int) (Result, error) {
	if m == nil {
		return Result{}, fmt.Errorf("stream: nil model")
	}
	if err := checkK(m, k, -1); err != nil {
		return Result{}, err
	}
	if items == nil {
		items = IDOrder(m.N())
	} else if err := m.CheckItems(items); err != nil {
		return Result{}, fmt.Errorf("stream: exact MAP candidates: %w", err)
	}
	n := len(items)
	if k > n {
		return Result{}, fmt.Errorf("stream: k = %d exceeds the number of items %d", k, n)
	}
	total := 1.0
	for i := 0; i < k; i++ {
		total = total * float64(n-i) / float64(i+1)
	}
	if total > MaxExactSubsets {
		return Result{}, fmt.Errorf("stream: exact MAP over C(%d, %d) ≈ %.3g subsets exceeds %d", n, k, total, MaxExactSubsets)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("stream: exact MAP: %w", err)
	}
	start := time.Now()
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	set := make([]int, k)
	best := ndpp.ZeroValue
	var sol []int
	var evals int64
	for {
		if evals%exactCheck == exactCheck-1 {
			if err := ctx.Err(); err != nil {
				return Result{}, fmt.Errorf("stream: exact MAP: stopped after %d subsets: %w", evals, err)
			}
		}
		for i, p := range idx {
			set[i] = items[p]
		}
		ld, sign, err := m.LogDet(set)
		if err != nil {
			return Result{}, err
		}
		evals++
		if v := (ndpp.Value{Log: ld, Zero: sign <= 0}); v.Greater(best) {
			best, sol = v, append(sol[:0], set...)
		}
		// Next combination.
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			break
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
	return Result{Algo: NameExact, K: k, Solution: sol, Value: best, Evals: evals, Items: int64(n),
		Seconds: time.Since(start).Seconds()}, nil
}
