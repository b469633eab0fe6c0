package detcache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// blockStats accumulates what TestBlockMatchesDirect saw.
type blockStats struct {
	columns, ratios int
	// proofs: block tests that proved values below a threshold (each
	// checked against the values); checks: all block tests; differ: those
	// whose answer differs from the same test on Prepare's products.
	proofs, checks, differ int
	// maxErrRatio: the largest Prepare bound / block bound where the block's
	// ratio is resolved (|r| > blockSafety·err); maxNoiseRatio: the same
	// where it is not (a ratio zero within rounding, where the block's
	// bounds raise the noise inputs s, p_j, q_j: see blockSafety).
	maxErrRatio, maxNoiseRatio float64
}

// compareRatio checks a block ratio rb (bound eb) against Prepare's rx
// (bound ex): both within their bounds of each other, and Prepare's within
// (blockSafety−1)·eb of the block's, the margin below() relies on.
func (st *blockStats) compareRatio(t *testing.T, rb, eb, rx, ex float64, format string, args ...any) {
	t.Helper()
	st.ratios++
	msg := fmt.Sprintf(format+": ratio %v (bound %v) vs Prepare %v (bound %v)", append(args, rb, eb, rx, ex)...)
	require.LessOrEqual(t, math.Abs(rb-rx), eb+ex, msg)
	require.LessOrEqual(t, math.Abs(rb-rx), (blockSafety-1)*eb, msg)
	if eb > 0 {
		if math.Abs(rb) > blockSafety*eb {
			st.maxErrRatio = math.Max(st.maxErrRatio, ex/eb)
		} else {
			st.maxNoiseRatio = math.Max(st.maxNoiseRatio, ex/eb)
		}
	}
}

// blockItems draws a block: random items, a run of consecutive items, and
// sometimes an item of S or a repeated item.
func blockItems(rng *rand.Rand, o Oracle, size int) []int {
	n := o.Model().N()
	items := make([]int, 0, size)
	if rng.IntN(3) == 0 {
		lo := rng.IntN(max(1, n-size))
		for i := lo; i < min(n, lo+size); i++ {
			items = append(items, i)
		}
		return items
	}
	for len(items) < size {
		switch r := rng.IntN(20); {
		case r == 0 && o.Len() > 0:
			items = append(items, o.Items()[rng.IntN(o.Len())])
		case r == 1 && len(items) > 0:
			items = append(items, items[rng.IntN(len(items))])
		default:
			items = append(items, rng.IntN(n))
		}
	}
	return items
}

// checkBlock scores a block against o's current S and compares every
// column with Prepare's products of the same item, and every block test
// with the values of the value methods (the one-item path) and of fresh
// LUs, and with the same test on Prepare's products.
// With vectors, the block is scored as vector items (copies of the
// model's rows, ScoreBlockItems): the block then leaves b_tᵀC out for an
// exactly skew C.
func checkBlock(t *testing.T, o *Fast, rng *rand.Rand, st *blockStats, label string, vectors bool) {
	items := blockItems(rng, o, 1+rng.IntN(12))
	b := o.NewBlock(len(items) + rng.IntN(3))
	before := o.Stats()
	scored := false
	if vectors {
		label += " vectors"
		its := make([]ndpp.Item, len(items))
		for c, it := range items {
			its[c] = vecItem(o.Model(), it)
		}
		scored = o.ScoreBlockItems(b, its)
	} else {
		scored = o.ScoreBlock(b, items)
	}
	if !scored {
		require.True(t, o.Direct(), "%s: ScoreBlock failed outside direct mode", label)
		return
	}
	require.Equal(t, before, o.Stats(), "%s: ScoreBlock counted", label)
	// the products the swap and pair tests use, compared below
	b.ensureQ()
	for c := range items {
		b.ensureQn(b.col(c))
		require.LessOrEqual(t, b.col(c).qn, b.qnBound(b.col(c)), "%s: column %d: qnBound below qn", label, c)
		// The block's Schur complements and error scales (every column
		// at once) are schur's on the column's own w and p, bit for bit.
		got := *b.col(c)
		one := got
		o.schur(&one, b.zt[c])
		if vectors && o.skew && one.serr != 0 {
			one.serr += b.lttErr[c] // as ScoreBlockItems adds it
		}
		bits := func(x *Cand) [7]uint64 {
			return [7]uint64{math.Float64bits(x.s), math.Float64bits(x.smag), math.Float64bits(x.serr),
				math.Float64bits(x.pn), math.Float64bits(x.w1), math.Float64bits(x.zp), math.Float64bits(x.zt)}
		}
		require.Equal(t, bits(&one), bits(&got), "%s: column %d: the block's s, smag, serr, pn, w1, zp, zt differ from schur's", label, c)
	}
	m, k := o.Model(), o.Len()
	x, y := o.NewCand(), o.NewCand()
	dst := make([]ndpp.Value, k)
	base := o.Value()
	thresholds := func(vmax ndpp.Value) []float64 {
		ls := []float64{base.Log - 1, base.Log, base.Log + math.Log(1.1), math.Inf(-1), math.NaN()}
		if !vmax.Zero {
			ls = append(ls, vmax.Log-1e-9, vmax.Log, vmax.Log+1e-12, vmax.Log+1e-6, vmax.Log+0.1, vmax.Log-0.1)
		}
		return ls
	}
	// check records one block test: proved is its answer, item the same
	// test on Prepare's products, vals the values it speaks of from the
	// value methods (which must not exceed L) and fresh those from fresh
	// LUs (which may exceed L by their own error and the oracle's).
	check := func(what string, L float64, proved, item bool, vals, fresh []ndpp.Value) {
		st.checks++
		if proved != item {
			st.differ++
		}
		if !proved {
			return
		}
		st.proofs++
		for _, v := range vals {
			require.False(t, v.Greater(ndpp.Value{Log: L}), "%s: %s below %v, but the value method gives %v", label, what, L, v)
		}
		for _, v := range fresh {
			require.False(t, v.Greater(ndpp.Value{Log: L + logTolIll}), "%s: %s below %v, but a fresh LU gives %v", label, what, L, v)
		}
	}
	// the block test on Prepare's ratios
	itemBelow := func(L float64, ratios func(yield func(r, err float64) bool)) bool {
		tt := b.threshold(L)
		if tt == 0 {
			return false
		}
		ok := true
		ratios(func(r, err float64) bool { ok = below(r, err, tt); return ok })
		return ok
	}
	checkSwapsBelowFrom(t, b, label, thresholds(base))
	for c, it := range items {
		bc := b.col(c)
		o.Prepare(x, it)
		require.Equal(t, x.dup, bc.dup, "%s: column %d", label, c)
		st.columns++
		if x.dup >= 0 {
			for _, L := range thresholds(base) {
				require.False(t, b.AddBelow(c, L) || b.SwapsBelow(c, L), "%s: column %d holds an item of S", label, c)
			}
			continue
		}
		// Add: the Schur complement within both bounds.
		require.LessOrEqual(t, math.Abs(bc.s-x.s), bc.serr+x.serr, "%s: column %d: s %v vs Prepare %v", label, c, bc.s, x.s)
		av := o.AddValue(x)
		fv := ndpp.ZeroValue
		if set := append(append([]int(nil), o.Items()...), it); len(set) <= m.MaxRank() {
			fv = freshValue(t, m, set)
		}
		for _, L := range thresholds(av) {
			check("add", L, b.AddBelow(c, L), itemBelow(L, func(yield func(r, err float64) bool) { yield(x.s, x.serr) }), []ndpp.Value{av}, []ndpp.Value{fv})
		}
		if k == 0 {
			continue
		}
		// Swaps: every ratio within both bounds.
		o.SwapValues(x, dst)
		vals, fresh := append([]ndpp.Value(nil), dst[:k]...), []ndpp.Value(nil)
		for j := 0; j < k; j++ {
			set := append([]int(nil), o.Items()...)
			set[j] = it
			fresh = append(fresh, freshValue(t, m, set))
			rb, eb := o.swapDet(bc, j), b.swapErr(bc, j)
			_, _, es := o.swapRatio(bc, j)
			require.LessOrEqual(t, es, eb, "%s: column %d swap %d: swapErr below swapRatio's bound", label, c, j)
			require.LessOrEqual(t, eb, b.swapErrBound(c), "%s: column %d swap %d: swapErrBound below the swap's bound", label, c, j)
			rx, _, ex := o.swapRatio(x, j)
			st.compareRatio(t, rb, eb, rx, ex, "%s: column %d swap %d", label, c, j)
		}
		vmax := ndpp.ZeroValue
		for _, v := range append(vals, fresh...) {
			if v.Greater(vmax) {
				vmax = v
			}
		}
		swapRatios := func(yield func(r, err float64) bool) {
			for j := 0; j < k; j++ {
				if r, _, e := o.swapRatio(x, j); !yield(r, e) {
					return
				}
			}
		}
		for _, L := range thresholds(vmax) {
			check("swaps", L, b.SwapsBelow(c, L), itemBelow(L, swapRatios), vals, fresh)
		}
		// Pairs with the previous column.
		if c == 0 || k < 2 || b.col(c-1).dup >= 0 || items[c-1] == it {
			continue
		}
		o.Prepare(y, items[c-1])
		b.colRows(c-1, c)
		o.pairSigma(b.col(c-1), bc)
		bound := b.pairErrBound(c-1, c)
		vals, fresh = vals[:0], fresh[:0]
		for a := 0; a < k; a++ {
			for bb := a + 1; bb < k; bb++ {
				set := append([]int(nil), o.Items()...)
				set[a], set[bb] = items[c-1], it
				vals = append(vals, o.PairSwapValue(y, x, a, bb))
				fresh = append(fresh, freshValue(t, m, set))
				rb, eb := o.pairDet(b.col(c-1), bc, a, bb), b.pairErr(b.col(c-1), bc, a, bb)
				require.LessOrEqual(t, eb, bound, "%s: columns %d, %d pair (%d, %d): pairErrBound below the pair's bound", label, c-1, c, a, bb)
				rx, _, ex := o.pairRatio(y, x, a, bb)
				st.compareRatio(t, rb, eb, rx, ex, "%s: columns %d, %d pair (%d, %d)", label, c-1, c, a, bb)
			}
		}
		pmax := ndpp.ZeroValue
		for _, v := range append(vals, fresh...) {
			if v.Greater(pmax) {
				pmax = v
			}
		}
		pairRatios := func(yield func(r, err float64) bool) {
			for a := 0; a < k; a++ {
				for bb := a + 1; bb < k; bb++ {
					if r, _, e := o.pairRatio(y, x, a, bb); !yield(r, e) {
						return
					}
				}
			}
		}
		for _, L := range thresholds(pmax) {
			check("pairs", L, b.PairsBelow(c-1, c, L), itemBelow(L, pairRatios), vals, fresh)
		}
	}
}

// checkSwapsBelowFrom checks that SwapsBelowFrom answers as SwapsBelow
// column by column, from every column, at each threshold.
func checkSwapsBelowFrom(t *testing.T, b *Block, label string, ls []float64) {
	for _, L := range ls {
		for from := 0; from < b.Len(); from++ {
			want := from
			for want < b.Len() && b.SwapsBelow(want, L) {
				want++
			}
			require.Equal(t, want, b.SwapsBelowFrom(from, L), "%s: L %v from %d", label, L, from)
		}
	}
}

// TestBlockMatchesDirect: on random and ill-conditioned models, without and
// with a diagonal (then also with k > 2d), at every
// state of random operation sequences, a block's products agree with
// Prepare's within both error bounds; every proof that an item's values
// stay below a threshold holds for the values of the one-item path and for
// fresh LUs; and the block tests answer as the same tests on Prepare's
// products, except rarely at a threshold within rounding of a ratio.
func TestBlockMatchesDirect(t *testing.T) {
	sequences := 200
	if testing.Short() || raceEnabled {
		sequences = 40
	}
	st := &blockStats{}
	for seed := uint64(1); seed <= uint64(sequences+sequences/2); seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		var m *ndpp.Model
		d := 2 + rng.IntN(6)
		k := 1 + rng.IntN(min(2*d, 10))
		n := k + 12 + rng.IntN(40)
		kind := -1
		if seed%3 == 0 {
			kind = int(seed/3) % 6
			m = illModel(t, seed, n, d, kind)
		} else {
			m = ndpp.Random(n, d, seed, ndpp.RandomOptions{Shared: seed%4 == 0, BlockDiagonal: seed%5 == 0})
		}
		label := fmt.Sprintf("seed %d kind %d (d %d, n %d)", seed, kind, d, n)
		if seed > uint64(sequences) { // the last third with a diagonal
			scale, partial := ndpptest.DiagCase(seed)
			m = withDiag(t, m, scale, seed, partial)
			if rng.IntN(2) == 0 {
				k = 2*d + 1 + rng.IntN(2) // beyond 2d
			}
			label += fmt.Sprintf(" diagonal %g partial %v", scale, partial)
		}
		k = min(k, m.MaxRank())
		o, err := NewFast(m, k)
		require.NoError(t, err)
		r := newOpRun(t, o, seed, logTolIll)
		vrng := rand.New(rand.NewPCG(seed, 29)) // half the blocks as vector items
		for step := 0; step < 2*k+6; step++ {
			checkBlock(t, o, rng, st, fmt.Sprintf("%s k %d step %d", label, k, step), vrng.IntN(2) == 0)
			r.step()
		}
	}
	t.Logf("%d columns, %d ratios compared with Prepare's; %d block tests, %d proofs checked against the values, %d answers differ from the same test on Prepare's products; largest Prepare/block bound ratio %.3g (%.3g where the ratio is zero within rounding)",
		st.columns, st.ratios, st.checks, st.proofs, st.differ, st.maxErrRatio, st.maxNoiseRatio)
	require.Greater(t, st.proofs, st.checks/4, "the block tests prove too little")
	require.Less(t, st.maxErrRatio, 2.0, "Prepare's bound exceeds twice the block's on a resolved ratio: below() assumes at most that")
	require.Less(t, st.maxNoiseRatio, 2.0, "Prepare's bound exceeds twice the block's on a ratio zero within rounding: below() assumes at most that")
	require.Less(t, float64(st.differ), 0.005*float64(st.checks), "the block tests disagree too often with the same tests on Prepare's products")
}

// TestBlockEdges: Naive and direct mode never score; queries on unscored
// or stale blocks and bad arguments panic; scoring allocates nothing and
// counts nothing.
func TestBlockEdges(t *testing.T) {
	m := ndpp.Random(40, 3, 2, ndpp.RandomOptions{})
	nv := mustNaive(t, m, 3)
	nb := nv.NewBlock(4)
	require.False(t, nv.ScoreBlock(nb, []int{1, 2}))
	require.PanicsWithValue(t, "detcache: Block was not scored (ScoreBlock returned false or was not called)", func() { nb.SwapsBelow(0, 0) })

	f := mustFast(t, m, 3)
	require.Panics(t, func() { f.ScoreBlock(nb, []int{1}) }, "another oracle's block")
	b := f.NewBlock(4)
	require.Panics(t, func() { f.ScoreBlock(b, []int{1, 2, 3, 4, 5}) }, "too many items")
	require.Panics(t, func() { f.ScoreBlock(b, []int{40}) }, "item out of range")
	require.Panics(t, func() { f.NewBlock(0) })
	c := f.NewCand()
	for _, it := range []int{0, 1, 2} {
		f.Prepare(c, it)
		require.NoError(t, f.Add(c))
	}
	require.True(t, f.ScoreBlock(b, []int{5, 6, 7}))
	require.Equal(t, 3, b.Len())
	require.Panics(t, func() { b.AddBelow(3, 0) }, "column out of range")
	require.Panics(t, func() { b.SwapsBelowFrom(3, 0) }, "column out of range")
	require.Equal(t, 0, b.SwapsBelowFrom(0, math.Inf(-1)), "nothing is below −Inf")
	f.Prepare(c, 9)
	require.NoError(t, f.Swap(0, c))
	require.PanicsWithValue(t, "detcache: Block is stale: the solution changed after ScoreBlock", func() { b.SwapsBelow(0, 0) })

	if !raceEnabled {
		items := []int{10, 12, 14, 16}
		st := f.Stats()
		allocs := testing.AllocsPerRun(20, func() {
			f.ScoreBlock(b, items)
			for c := range items {
				b.SwapsBelow(c, f.Value().Log)
				b.AddBelow(c, f.Value().Log)
			}
			b.PairsBelow(0, 1, f.Value().Log)
		})
		require.Zero(t, allocs)
		require.Equal(t, st, f.Stats())
	}

	// Direct mode: a singular solution (an item and its copy).
	v, bb, _, cc := m.Rows()
	v2, b2 := append([]float64(nil), v...), append([]float64(nil), bb...)
	copy(v2[3:6], v2[0:3])
	copy(b2[3:6], b2[0:3])
	ms, err := ndpp.NewFromRows(40, 3, v2, b2, cc)
	require.NoError(t, err)
	fs := mustFast(t, ms, 3)
	cs := fs.NewCand()
	fs.Prepare(cs, 0)
	require.NoError(t, fs.Add(cs))
	fs.Prepare(cs, 1)
	require.NoError(t, fs.Add(cs))
	require.True(t, fs.Direct())
	require.False(t, fs.ScoreBlock(fs.NewBlock(2), []int{5, 6}))
}

// TestBlockInvalidItems: a column whose item fails ItemCheck's tests of its
// values (an entry too large for the scale bound, a NaN, an infinity, an
// infinite δ) proves nothing, even at a threshold far above every value,
// where the valid columns beside it prove every test; the valid columns
// are scored as without it.
func TestBlockInvalidItems(t *testing.T) {
	for _, diag := range []bool{false, true} {
		m := ndpp.Random(40, 3, 5, ndpp.RandomOptions{})
		if diag {
			m = withDiag(t, m, 0.5, 5, false)
		}
		o, err := NewFastKernel(ndpp.KernelOf(m), 3)
		require.NoError(t, err)
		c := o.NewCand()
		for _, it := range []int{0, 1, 2} {
			o.PrepareItem(c, vecItem(m, it))
			require.NoError(t, o.Add(c))
		}
		chk := ndpp.NewItemCheck(ndpp.KernelOf(m))
		bads := []func(it *ndpp.Item){
			func(it *ndpp.Item) { it.B[0] = 1e76 },
			func(it *ndpp.Item) { it.V[2] = -1e76 },
			func(it *ndpp.Item) { it.V[1] = math.NaN() },
			func(it *ndpp.Item) { it.B[2] = math.Inf(-1) },
		}
		if diag {
			bads = append(bads, func(it *ndpp.Item) { it.Delta = math.Inf(1) })
		}
		for bi, bad := range bads {
			items := make([]ndpp.Item, 8)
			for i := range items {
				items[i] = vecItem(m, 10+i)
			}
			bad(&items[3])
			require.Error(t, chk.Check(items[3]), "case %d", bi)
			b, ref := o.NewBlock(len(items)), o.NewBlock(len(items))
			require.True(t, o.ScoreBlockItems(b, items))
			L := o.Value().Log + 600 // far above every value of a valid item
			for col := range items {
				want := col != 3
				require.Equal(t, want, b.AddBelow(col, L), "case %d column %d", bi, col)
				require.Equal(t, want, b.SwapsBelow(col, L), "case %d column %d", bi, col)
				if col > 0 {
					require.Equal(t, want && col != 4, b.PairsBelow(col-1, col, L), "case %d columns %d, %d", bi, col-1, col)
				}
			}
			// The valid columns as in a block without the bad item.
			good := append(append([]ndpp.Item(nil), items[:3]...), items[4:]...)
			require.True(t, o.ScoreBlockItems(ref, good))
			require.True(t, o.ScoreBlockItems(b, items))
			b.ensureQ()
			ref.ensureQ()
			for col, rc := range []int{0, 1, 2, -1, 3, 4, 5, 6} {
				if rc < 0 {
					continue
				}
				x, y := b.col(col), ref.col(rc)
				require.Equal(t, y.s, x.s, "case %d column %d", bi, col)
				require.Equal(t, y.p[:3], x.p[:3], "case %d column %d", bi, col)
				require.Equal(t, y.q[:3], x.q[:3], "case %d column %d", bi, col)
			}
		}
	}
}
