package learn

import (
	"runtime"
	"sync/atomic"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	gonumblas "gonum.org/v1/gonum/blas/gonum"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
)

// The online learner's exact normaliser, refactored in a pipeline.
//
// Every FactorEvery baskets (at positions 1, F+1, 2F+1, …) the learner takes
// a snapshot of what the refactorisation needs — the current values of the
// columns zᵢ = [vᵢ; bᵢ] changed since the previous snapshot, and C — and
// hands it to a job that
//
//	updates G = Σᵢ zᵢzᵢᵀ by the changed columns (or recomputes it),
//	factors A = I + WG (log det A = log det(I + L)), and
//	forms K = A⁻¹W + WᵀA⁻ᵀ and ∂/∂C = (G[d:, :] A⁻¹[:, d:])ᵀ,
//
// on a worker goroutine while the learner goes on with the next baskets. The
// pipe keeps every column's value at the last snapshot (zs, G's columns),
// so a snapshot copies only the changed columns, once: the job updates G by
// zᵢzᵢᵀ − zsᵢzsᵢᵀ and writes zᵢ into zs. The result takes effect a fixed
// number of baskets (the lag) after the snapshot, whenever the job actually
// finished: the learner waits for it there if need be, so the parameters
// never depend on scheduling, the number of cores or GOMAXPROCS. With
// FactorEvery = 1 the lag is 0 and every basket sees the factorisation of
// the parameters it starts from (the exact gradient); otherwise the lag is
// OnlineOptions.Lag, at most FactorEvery, so at most one job is in flight.
//
// Between two results the gradient map K is fixed, and K zᵢ is computed at
// most once per item per result, from zᵢ when the item first occurs after
// the result took effect (the basket's items four at a time), and reused for
// the item's later occurrences in the same period; when the catalogue is
// small against the columns that change in a period, every item's K zᵢ is
// computed as the result takes effect instead, four items per pass over K
// (from the same zᵢ, as a column changes only when its item occurs; the
// four-vector kernel may round differently from the one-vector one). The
// normaliser's gradient an item sees is therefore that of parameters Lag to
// Lag + FactorEvery baskets old. Measured costs of this lag are given with
// OnlineOptions.FactorEvery.
// A job the worker has not started by the time its result is needed is run
// by the learner itself, and the learner computes rows of a recomputation
// of G from scratch while it waits for one (gramTask; the worker likewise
// for a job the learner runs); the results are the same bits whoever
// computes what.
// (Computing K zᵢ of the changed columns on the worker instead, which
// needs their values copied over and the results copied back, was slower on
// two cores: what moves between the cores costs more than the products.)
// Between jobs, the worker computes K zᵢ for the items of the basket after
// the learner's when Run knows it (kzAhead), the same bits as prepareKZ.

// normJob is one refactorisation: its snapshot (inputs) and its result.
type normJob struct {
	// full recomputes G from all columns of zs (after the changed ones
	// are written) instead of updating it by the changed columns.
	full bool
	// items are the columns changed since the previous snapshot and z1
	// their current values (len(items)×2d).
	items []int
	z1    []float64
	c     []float64 // C at the snapshot (d×d)
	// zs is the pipe's snapshot rows as they were at the snapshot (the job
	// reads and writes rows below len(zs) only; the learner appends rows
	// for new items beyond them while the job runs).
	zs []float64

	// Result: ok reports that A was non-singular; then the pipe's nw holds
	// K, ∂/∂C and log det A.
	ok bool
}

// normPipe is the exact normaliser's state. While a job is in flight its
// goroutine owns nw (G and the next K, ∂/∂C), zs (up to the job's rows), y and zold; the
// learner owns the active fields and touches the others only after wait.
type normPipe struct {
	d, lag int

	nw     *normWork // G, and the next K, ∂/∂C, log det
	zs     []float64 // n×2d: row i = zᵢ at the last snapshot (G = Σ zᵢzᵢᵀ over the rows)
	y      []float64 // factor scratch (Y)
	zold   []float64 // the changed columns' previous values, as rows
	job    normJob
	w      worker
	runFn  func() // np.runClaimed as a value made once (no allocation per job)
	flying bool   // a job was launched and its result not waited for
	// claim is the launched job's state: 0 not started, 1 running, 2
	// done. Whichever goroutine moves it from 0 to 1 runs the job: the
	// worker, or the learner when it needs the result before the worker
	// has started (wait), so a worker kept off the processor does not hold
	// the learner up. Who runs it does not change the result.
	claim  atomic.Int32
	swapAt int64 // position where the job's result takes effect (0: none pending)

	// Active: the result in effect.
	k, gc  []float64
	logDet float64
	gen    int64 // results taken into effect so far
	// K zᵢ of the active K, valid where the row's stKZGen is gen: 2d
	// floats at kzOff in row i of the learner's per-item rows *st
	// (Online.st), for n items.
	st    *itemRows
	kzOff int
	n     int
	// Scratch of kzBatch: up to four zᵢ and their K zᵢ, and the items.
	zq, kzq []float64
	qi      [4]int

	// A recomputation of G from scratch offered to the goroutine that
	// does not run the job (gramTask), and the scratch of the goroutine
	// running the job and of the other.
	gram          atomic.Pointer[gramTask]
	gyRun, gyHelp []float64
}

// gramTask is a recomputation of G = ZᵀZ split into units, each a range of
// groups of four rows of G computed whole (gramUnit) by whichever goroutine
// claims it: the one running the job, and the other while it waits (the
// learner for the job's result, or the worker for a job the learner runs).
// Each group's sums are the same kernel calls whoever computes it, so the
// result does not depend on who claims which. A task is made per
// recomputation and not reused, so a late helper finds its units all
// claimed.
type gramTask struct {
	z          []float64 // k×m rows
	k, m       int
	g          []float64    // G (m×m), upper triangle written
	bounds     []int        // unit u is groups bounds[u]…bounds[u+1]−1
	next, done atomic.Int64 // units claimed, units finished
}

// gramUnits is the number of units a recomputation of G is split into:
// each unit reads Z once, and a few let the two goroutines share the
// work when one of them arrives late.
const gramUnits = 4

// gramBlock is the number of rows of Z a unit takes at a time: all its
// groups' sums advance over one block (in cache) before the next block is
// read.
const gramBlock = 256

// newGramTask splits the recomputation of G from the k×m Z into units of
// about equal cost (a group's cost is its width, m − r₀).
func newGramTask(z []float64, k, m int, g []float64) *gramTask {
	t := &gramTask{z: z, k: k, m: m, g: g}
	groups := (m + 3) / 4
	total := 0
	for gi := range groups {
		total += m - min(4*gi, m-4)
	}
	t.bounds = append(t.bounds, 0)
	acc := 0
	for gi := range groups {
		acc += m - min(4*gi, m-4)
		if len(t.bounds) < gramUnits && acc*gramUnits >= total*len(t.bounds) && gi+1 < groups {
			t.bounds = append(t.bounds, gi+1)
		}
	}
	t.bounds = append(t.bounds, groups)
	return t
}

// work claims and computes units until none is left, with y as scratch
// (grown as gramUnit needs); it returns y.
func (t *gramTask) work(y []float64) []float64 {
	units := int64(len(t.bounds) - 1)
	for {
		u := t.next.Add(1) - 1
		if u >= units {
			return y
		}
		g0, g1 := t.bounds[u], t.bounds[u+1]
		y = resize(y, 4*t.m*(g1-g0))
		gramUnit(t.g, t.z, t.k, t.m, g0, g1, y)
		t.done.Add(1)
	}
}

// help computes units of the recomputation of G on offer, if any, with
// the helper's scratch.
func (np *normPipe) help() {
	if t := np.gram.Load(); t != nil {
		np.gyHelp = t.work(np.gyHelp)
	}
}

// gramUnit computes groups g0…g1−1 of the upper triangle of G = ZᵀZ
// (Z k×m row-major, m ≥ 4, k ≥ 1): group gi is rows 4gi…4gi+3 from the
// diagonal on, as blas.Syrk does on the pure-Go backend, by f64.GemvT4 over
// Z's first gramBlock rows continued by f64.GemvT4Add over each further
// block (the same bits as one f64.GemvT4 pass over Z), all the unit's
// groups advancing over one block before the next is read. The last group
// ends at row m−1 and writes only the rows no other group writes. y is
// scratch of at least 4m(g1 − g0).
func gramUnit(g, z []float64, k, m, g0, g1 int, y []float64) {
	for lo := 0; lo < k; lo += gramBlock {
		rows := min(gramBlock, k-lo)
		zb := z[lo*m:]
		for gi := g0; gi < g1; gi++ {
			r0 := min(4*gi, m-4)
			w := m - r0
			yg := y[4*m*(gi-g0):]
			if lo == 0 {
				f64.GemvT4(rows, w, zb[r0:], m, zb[r0:], 1, m, yg, w)
			} else {
				f64.GemvT4Add(rows, w, zb[r0:], m, zb[r0:], 1, m, yg, w)
			}
		}
	}
	for gi := g0; gi < g1; gi++ {
		r := 4 * gi
		r0 := min(r, m-4)
		w := m - r0
		yg := y[4*m*(gi-g0):]
		for v := r - r0; v < 4; v++ {
			copy(g[(r0+v)*m+r0+v:(r0+v)*m+m], yg[v*w+v:v*w+w])
		}
	}
}

// pureGoBLAS reports whether the backend in use is gonum's, whose Syrk
// (blas.Syrk) computes G's rows as gramUnit does.
func pureGoBLAS() bool {
	_, pure := blas64.Implementation().(gonumblas.Implementation)
	return pure
}

// gramShared is gramFrom with the rows of G offered to the other goroutine
// (gramTask) on the pure-Go backend; the result is gramFrom's, bit for
// bit.
func (np *normPipe) gramShared(z []float64, n int) {
	m := 2 * np.d
	if n == 0 || m < 4 || !pureGoBLAS() {
		np.gramFrom(z, n)
		return
	}
	t := newGramTask(z, n, m, np.nw.g)
	np.gram.Store(t)
	np.gyRun = t.work(np.gyRun)
	for t.done.Load() < int64(len(t.bounds)-1) { // units the helper claimed
		runtime.Gosched()
	}
	np.gram.Store(nil)
	np.nw.symmetrize()
}

func newNormPipe(d, lag int) *normPipe {
	m := 2 * d
	np := &normPipe{d: d, lag: lag, nw: newNormWork(d), y: make([]float64, d*d),
		k: make([]float64, m*m), gc: make([]float64, d*d), zq: make([]float64, 4*m), kzq: make([]float64, 4*m)}
	np.runFn = np.runClaimed
	return np
}

// grow extends the per-item state to n items, with zs rows of the new
// items zero (not yet in G: the caller marks non-zero columns changed, so
// the next snapshot adds them). Rows are appended beyond those of the job
// in flight, which keeps running, unless zs must move to a larger array:
// then the job is waited for first (amortised over doublings).
func (np *normPipe) grow(n int) {
	m := 2 * np.d
	if n > np.n {
		np.n = n
		if cap(np.zs) < n*m {
			np.wait() // the job writes rows of the array it was given
			zs := make([]float64, len(np.zs), max(n*m, 2*cap(np.zs)))
			copy(zs, np.zs)
			np.zs = zs
		}
		lo := len(np.zs)
		np.zs = np.zs[:n*m]
		clear(np.zs[lo:])
	}
}

// setColumns makes zs and G those of all columns of p (G recomputed).
func (np *normPipe) setColumns(p *Params) {
	np.grow(p.N)
	for i := 0; i < p.N; i++ {
		zRow(np.zs[2*i*np.d:], p, i)
	}
	np.gramFrom(np.zs, p.N)
}

// launch starts the job described by np.job (filled by the caller) on the
// pipe's worker goroutine, or runs it on the caller's when sync is set.
func (np *normPipe) launch(sync bool) {
	if np.flying {
		panic("learn: normaliser job already running")
	}
	if sync {
		np.run()
		return
	}
	np.flying = true
	np.claim.Store(0)
	if np.w.job == nil {
		np.w.submit(np.runFn)
	} else {
		np.w.repost() // a hand-over of a job the learner ran may be pending
	}
}

// runClaimed runs the launched job unless another goroutine has claimed
// it, and else helps with its recomputation of G until it has finished.
func (np *normPipe) runClaimed() {
	if np.claim.CompareAndSwap(0, 1) {
		np.run()
		np.claim.Store(2)
		return
	}
	for np.claim.Load() == 1 {
		np.help()
		runtime.Gosched()
		osYield()
	}
}

// wait returns when the launched job, if any, has finished: it runs the
// job itself if the worker has not started it, and otherwise computes
// groups of the job's recomputation of G (gramTask) while it waits.
func (np *normPipe) wait() {
	if !np.flying {
		return
	}
	np.runClaimed() // runs the job, or helps the worker run it
	np.flying = false
}

// idle waits until the worker has no hand-over left (those of jobs the
// learner ran itself find nothing to do), so that none of it runs after.
func (np *normPipe) idle() {
	np.wait()
	np.w.wait()
}

// run executes np.job.
func (np *normPipe) run() {
	j, nw := &np.job, np.nw
	m := 2 * np.d
	zs := j.zs
	if k := len(j.items); !j.full && k > 0 {
		// G += Z₁ᵀZ₁ − ZₛᵀZₛ over the changed columns (new and old
		// values as rows), as two symmetric rank-k products on the upper
		// triangle, then mirrored.
		np.zold = resize(np.zold, k*m)
		for r, i := range j.items {
			copy(np.zold[r*m:(r+1)*m], zs[i*m:(i+1)*m])
		}
		blas.Syrk(gblas.Trans, m, k, -1, np.zold, m, 1, nw.g, m)
		blas.Syrk(gblas.Trans, m, k, 1, j.z1, m, 1, nw.g, m)
		nw.symmetrize()
	}
	for r, i := range j.items {
		copy(zs[i*m:(i+1)*m], j.z1[r*m:(r+1)*m])
	}
	if j.full {
		np.gramShared(zs, len(zs)/m)
	}
	j.ok = np.factor(j.c)
}

// takeEffect makes the finished job's result active (the job must have
// succeeded).
func (np *normPipe) takeEffect() {
	nw := np.nw
	np.k, nw.k = nw.k, np.k
	np.gc, nw.gc = nw.gc, np.gc
	np.logDet = nw.logDet
	np.gen++
	np.swapAt = 0
}

// kzBatch computes K zᵢ of the active K for the nq ≤ 4 items np.qi[:nq]
// (nothing for none), whose zᵢ are rows of np.zq, into their rows of kz
// (kzInto).
func (np *normPipe) kzBatch(nq int) {
	np.kzInto(np.k, np.gen, np.zq, np.kzq, np.qi[:nq])
}

// kzInto computes K zᵢ of the gradient map k of result gen for the items
// qi (at most four), whose zᵢ are rows of zq, into their rows of kz: one
// pass over K (f64.GemvT4; a single item by vecmat), with kzq (4×2d) as
// scratch.
func (np *normPipe) kzInto(k []float64, gen int64, zq, kzq []float64, qi []int) {
	m := 2 * np.d
	nq := len(qi)
	if nq > 1 {
		// Rows of zq past nq hold stale values; their products are dropped.
		f64.GemvT4(m, m, k, m, zq, m, 1, kzq, m)
	} else {
		for q := range nq {
			vecmat(kzq[q*m:(q+1)*m], k, m, m, zq[q*m:(q+1)*m], 1) // K is symmetric
		}
	}
	for q, i := range qi {
		copy(np.kzRow(i), kzq[q*m:(q+1)*m])
		np.st.row(i)[stKZGen] = float64(gen)
	}
}

// kzCurrent reports whether item i's K zᵢ is of the active K.
func (np *normPipe) kzCurrent(i int) bool {
	return np.st.row(i)[stKZGen] == float64(np.gen)
}

// kzRow returns item i's K zᵢ (2d floats in the learner's per-item state).
func (np *normPipe) kzRow(i int) []float64 {
	m := 2 * np.d
	return np.st.row(i)[np.kzOff : np.kzOff+m : np.kzOff+m]
}

// gramFrom recomputes G = ZᵀZ from the n×2d row-major Z: the backend's
// symmetric rank-n product on the upper triangle (blas.Syrk), mirrored.
func (np *normPipe) gramFrom(z []float64, n int) {
	nw := np.nw
	m := 2 * np.d
	if n == 0 {
		clear(nw.g)
		return
	}
	blas.Syrk(gblas.Trans, m, n, 1, z, m, 0, nw.g, m)
	nw.symmetrize()
}

// gramAll recomputes G from all items of p by gramFrom, keeping Z in nw.z
// for normWork.applyAll.
func (np *normPipe) gramAll(p *Params) {
	np.nw.fillZ(p)
	np.gramFrom(np.nw.z, p.N)
}

// factor computes what normWork.factor does (A = I + WG, A⁻¹, log det A,
// K = A⁻¹W + WᵀA⁻ᵀ and ∂/∂C = (G[d:, :] A⁻¹[:, d:])ᵀ), with the O(d³)
// products as row-times-matrix products (vecmat):
//
//	A[d+r, :]  = G[d:, :]ᵀ C[r, :]ᵀ       (A[d:, :] = C G[d:, :], G symmetric)
//	X[r, d:]   = Cᵀ A⁻¹[r, d:]ᵀ           (X = A⁻¹W, X[:, :d] = A⁻¹[:, :d])
//	Y[r, :]    = A⁻¹[:, d:]ᵀ G[d+r, :]ᵀ   (∂/∂C = Yᵀ)
func (np *normPipe) factor(c []float64) bool {
	nw := np.nw
	d, m := nw.d, 2*nw.d
	a, g, k := nw.a, nw.g, nw.k
	copy(a[:d*m], g[:d*m])
	vecmatN(a[d*m:], m, c, d, d, g[d*m:], d, m, m, 1)
	for r := 0; r < m; r++ {
		a[r*m+r]++
	}
	ld, sg := f64.Inverse(a, m, m, nw.piv, nw.work)
	if sg <= 0 {
		return false
	}
	nw.logDet = ld
	for r := 0; r < m; r++ {
		copy(k[r*m:r*m+d], a[r*m:r*m+d])
	}
	vecmatN(k[d:], m, a[d:], m, m, c, d, d, d, 1)
	for r := 0; r < m; r++ {
		for s := r; s < m; s++ {
			x := k[r*m+s] + k[s*m+r]
			k[r*m+s], k[s*m+r] = x, x
		}
	}
	y := np.y
	vecmatN(y, d, g[d*m:], m, d, a[d:], m, d, m, 1)
	for r := 0; r < d; r++ {
		for s := 0; s < d; s++ {
			nw.gc[s*d+r] = y[r*d+s]
		}
	}
	return true
}

// normStep runs the exact normaliser's schedule at the start of basket
// o.pos: the pending result takes effect if this is its position, and a new
// job is launched every FactorEvery baskets. It reports false if A stayed
// singular after a recomputation of G from scratch (divergence).
func (o *Online) normStep() bool {
	np := o.np
	if np.swapAt == o.pos {
		np.wait()
		if !o.applyJob() {
			return false
		}
		// K zᵢ of every item now, four per pass over K, when that costs
		// less than computing those of the items that occur in the period
		// one by one (at least as many as changed since the snapshot),
		// from the zᵢ the items' first occurrences would see, as a column
		// changes only when its item occurs.
		if n := o.p.N; n <= 4*len(o.dirtyList) {
			nq := 0
			for i := range n {
				nq = o.queueKZ(i, nq)
			}
			np.kzBatch(nq)
		}
	}
	if o.factored && (o.pos-1)%int64(o.opt.FactorEvery) != 0 {
		return true
	}
	sync := !o.factored || np.lag == 0
	o.snapshot()
	np.launch(sync)
	if sync {
		if !o.applyJob() {
			return false
		}
		o.factored = true
		return true
	}
	np.swapAt = o.pos + int64(np.lag)
	return true
}

// applyJob makes the finished job's result active. A failed job (A singular
// after rounding drift of G) is redone at once from all current columns.
func (o *Online) applyJob() bool {
	np := o.np
	o.flushNormC()
	if !np.job.ok {
		o.snapshotAll()
		np.run()
		o.lastRefresh, o.updates = o.pos, 0
		if !np.job.ok {
			np.swapAt = 0
			return false
		}
	}
	np.takeEffect()
	return true
}

// snapshot fills the next job from the current parameters: the columns
// changed since the last snapshot and their values, C, and whether G is
// recomputed: when so many columns changed that recomputing G is cheaper
// than updating it, and to bound the rounding drift of the updates once
// RefreshEvery baskets and as many column updates as there are items have
// passed since the last recomputation (so a recomputation, O(nd²), costs
// at most what the updates it follows cost, whatever the catalogue's size).
func (o *Online) snapshot() {
	np, p := o.np, o.p
	m := 2 * p.Dim
	j := &np.job
	j.items = append(j.items[:0], o.dirtyList...)
	for _, i := range j.items {
		o.itemRow(i)[stDirty] = 0
	}
	o.dirtyList = o.dirtyList[:0]
	j.c = append(j.c[:0], o.c...)
	// Two full 2d×2d rank-1 updates per changed column (8d² each) cost more
	// than the upper triangle of ZᵀZ (about 2d²·n).
	o.updates += int64(len(j.items))
	refresh := o.pos-o.lastRefresh >= int64(o.opt.RefreshEvery) && o.updates >= int64(p.N)
	j.full = refresh || 4*len(j.items) >= p.N
	if j.full {
		o.lastRefresh, o.updates = o.pos, 0
	}
	j.z1 = resize(j.z1, len(j.items)*m)
	for r, i := range j.items {
		zRow(j.z1[r*m:], o.p, i)
	}
	j.zs = np.zs
}

// snapshotAll makes the job recompute G from all current columns: every
// column is written into zs (the job owns none while the learner calls
// this), and the changed columns are no longer pending.
func (o *Online) snapshotAll() {
	np, j := o.np, &o.np.job
	for _, i := range o.dirtyList {
		o.itemRow(i)[stDirty] = 0
	}
	o.dirtyList = o.dirtyList[:0]
	for i := 0; i < o.p.N; i++ {
		zRow(np.zs[2*i*np.d:], o.p, i)
	}
	j.items = j.items[:0]
	j.c = append(j.c[:0], o.c...)
	j.full = true
	j.zs = np.zs
}

// zRow writes item i's zᵢ = [vᵢ; bᵢ] of p into dst[:2d].
func zRow(dst []float64, p *Params, i int) {
	d := p.Dim
	copy(dst[:d], p.V[i*d:(i+1)*d])
	copy(dst[d:2*d], p.brows()[i*d:(i+1)*d])
}

// resize returns s with length n, reallocated if its capacity is short.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// prepareKZ makes K zᵢ of the active factorisation current for the basket's
// items (normPipe.kzRow), computing those the active result has none of yet
// from their zᵢ now, up to four per pass over K.
func (o *Online) prepareKZ(basket []int) {
	nq := 0
	for _, i := range basket {
		nq = o.queueKZ(i, nq)
	}
	o.np.kzBatch(nq)
}

// queueKZ adds item i, unless its K zᵢ is current, to the nq items queued
// for kzBatch, running the batch when it holds four; it returns the number
// queued.
func (o *Online) queueKZ(i, nq int) int {
	np := o.np
	if np.kzCurrent(i) {
		return nq
	}
	m := 2 * np.d
	zRow(np.zq[nq*m:], o.p, i)
	np.qi[nq] = i
	if nq++; nq == 4 {
		np.kzBatch(nq)
		nq = 0
	}
	return nq
}
