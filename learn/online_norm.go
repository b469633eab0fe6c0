package learn

// The online learner's exact normaliser, refactored in a pipeline.
//
// Every FactorEvery baskets (at positions 1, F+1, 2F+1, …) the learner takes
// a snapshot of what the refactorisation needs — the columns zᵢ = [vᵢ; bᵢ]
// changed since the previous snapshot (old and new values), or all columns
// when the Gram matrix is recomputed, and C — and hands it to a job that
//
//	updates G = Σᵢ zᵢzᵢᵀ,
//	factors A = I + WG (log det A = log det(I + L)), and
//	forms K = A⁻¹W + WᵀA⁻ᵀ and ∂/∂C = (G[d:, :] A⁻¹[:, d:])ᵀ,
//
// on a worker goroutine while the learner goes on with the next baskets. The
// result takes effect a fixed number of baskets (the lag) after the
// snapshot, whenever the job actually finished: the learner waits for it
// there if need be, so the parameters never depend on scheduling, the number
// of cores or GOMAXPROCS. With FactorEvery = 1 the lag is 0 and every basket
// sees the factorisation of the parameters it starts from (the exact
// gradient); otherwise the lag is FactorEvery, so the job has a whole
// period of baskets to finish in. Halfway through the lag a second job
// computes K zᵢ, with the new K, for the changed columns (the items most
// likely to occur again) from their z at that point.
//
// Between two results the gradient map K is fixed, and K zᵢ is computed at
// most once per item per result (precomputed as above, else from zᵢ when
// the item first occurs after the result took effect) and reused for the
// item's later occurrences in the same period. The normaliser's gradient an
// item sees is therefore that of parameters at most 2·FactorEvery baskets
// old. Measured costs of this lag are given with OnlineOptions.FactorEvery.

// normJob is one refactorisation: its snapshot (inputs) and its result.
type normJob struct {
	// full recomputes G from all n columns instead of updating it by the
	// changed columns: vAll and bAll are copies of V and B (n×d, copied
	// whole), interleaved into zAll (row i = zᵢᵀ) by the job.
	full       bool
	n          int
	vAll, bAll []float64
	zAll       []float64
	// items are the columns changed since the previous snapshot, z0 their
	// values at that snapshot and z1 their current values (len(items)×2d
	// each).
	items  []int
	z0, z1 []float64
	c      []float64 // C at the snapshot (d×d)

	// kzLater leaves kz to a second job (runKZ), submitted halfway to the
	// result's position with fresher z1.
	kzLater bool

	// Result: ok reports that A was non-singular; then the pipe's nw holds
	// K, ∂/∂C and log det A, and kz[r] = K z1[r].
	ok bool
	kz []float64
}

// normPipe is the exact normaliser's state. While a job is in flight its
// goroutine owns nw (G and the next K, ∂/∂C), col, y and zbuf; the learner
// owns the active fields and touches the others only after wait.
type normPipe struct {
	d, lag int

	nw     *normWork // G, and the next K, ∂/∂C, log det
	col, y []float64 // factor scratch (invertBlocked's work, Y)
	zbuf   []float64 // Z and Zᵀ for the full Gram matrix
	job    normJob
	w      worker
	runFn  func() // np.run and np.runKZ as values made once (no allocation per job)
	kzFn   func()
	flying bool  // a job runs
	swapAt int64 // position where the job's result takes effect (0: none pending)
	kzAt   int64 // position where the job's K zᵢ are computed from fresh z (0: none)

	// Active: the result in effect.
	k, gc  []float64
	logDet float64
	gen    int64     // results taken into effect so far
	kz     []float64 // n×2d: K zᵢ of the active K, valid where kzGen[i] == gen
	kzGen  []int64
}

func newNormPipe(d, lag int) *normPipe {
	m := 2 * d
	np := &normPipe{d: d, lag: lag, nw: newNormWork(d), col: make([]float64, invBlockedWork(m)), y: make([]float64, d*d),
		k: make([]float64, m*m), gc: make([]float64, d*d)}
	np.runFn, np.kzFn = np.run, np.runKZ
	return np
}

// grow extends the per-item state to n items.
func (np *normPipe) grow(n int) {
	m := 2 * np.d
	if old := len(np.kzGen); n > old {
		np.kz = append(np.kz, make([]float64, (n-old)*m)...)
		np.kzGen = append(np.kzGen, make([]int64, n-old)...)
	}
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
	np.w.submit(np.runFn)
}

// wait blocks until the running job, if any, has finished.
func (np *normPipe) wait() {
	if np.flying {
		np.w.wait()
		np.flying = false
	}
}

// run executes np.job.
func (np *normPipe) run() {
	j, nw := &np.job, np.nw
	m := 2 * np.d
	if j.full {
		np.interleave()
		np.gramFrom(j.zAll, j.n)
	} else {
		// G += zᵢzᵢᵀ − z⁰ᵢz⁰ᵢᵀ on both triangles (products commute, so G
		// stays exactly symmetric).
		for r := range j.items {
			z0, z1 := j.z0[r*m:(r+1)*m], j.z1[r*m:(r+1)*m]
			asm.Dger(m, m, -1, z0, 1, z0, 1, nw.g, m)
			asm.Dger(m, m, 1, z1, 1, z1, 1, nw.g, m)
		}
	}
	j.ok = np.factor(j.c)
	if j.ok && !j.kzLater {
		np.runKZ()
	}
}

// runKZ computes K zᵢ (the job's K) for the job's items from their z1.
func (np *normPipe) runKZ() {
	j := &np.job
	m := 2 * np.d
	j.kz = resize(j.kz, len(j.items)*m)
	vecmatN(j.kz, m, j.z1, m, len(j.items), np.nw.k, m, m, m, 1) // K is symmetric
}

// takeEffect makes the finished job's result active (the job must have
// succeeded).
func (np *normPipe) takeEffect() {
	j, nw := &np.job, np.nw
	m := 2 * np.d
	np.k, nw.k = nw.k, np.k
	np.gc, nw.gc = nw.gc, np.gc
	np.logDet = nw.logDet
	np.gen++
	for r, i := range j.items {
		copy(np.kz[i*m:(i+1)*m], j.kz[r*m:(r+1)*m])
		np.kzGen[i] = np.gen
	}
	np.swapAt, np.kzAt = 0, 0
}

// kzRow returns K zᵢ for the active K: the stored row if it was computed
// since the active result took effect, else computed now from z (= zᵢ) and
// stored.
func (np *normPipe) kzRow(i int, z []float64) []float64 {
	m := 2 * np.d
	row := np.kz[i*m : (i+1)*m]
	if np.kzGen[i] != np.gen {
		vecmat(row, np.k, m, m, z, 1)
		np.kzGen[i] = np.gen
	}
	return row
}

// gramFrom recomputes G = ZᵀZ from the n×2d row-major Z. Row r of its upper
// triangle is a row-times-matrix product, G[r, r:] = Z[:, r]ᵀ Z[:, r:]
// (vecmat on Z with column r of Z, i.e. row r of Zᵀ, as the coefficients);
// the lower triangle is mirrored. At n = 100, 2d = 60 this is several times
// faster than a GEMM, whose kernel for ZᵀZ is a loop of short AXPYs.
func (np *normPipe) gramFrom(z []float64, n int) {
	nw := np.nw
	m := 2 * np.d
	if cap(np.zbuf) < n*m {
		np.zbuf = make([]float64, n*m)
	}
	zt := np.zbuf[:n*m]
	for i := 0; i < n; i++ {
		for r, x := range z[i*m : (i+1)*m] {
			zt[r*n+i] = x
		}
	}
	// Four rows at a time from the first row's diagonal: the entries left
	// of the other rows' diagonals are lower-triangle ones, which
	// symmetrize overwrites.
	g := nw.g
	for r := 0; r < m; r += 4 {
		nv := min(4, m-r)
		vecmatN(g[r*m+r:], m, zt[r*n:], n, nv, z[r:], n, m-r, m, 1)
	}
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
	ld, sg := invertBlocked(a, m, nw.piv, np.col)
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

// zInto writes zᵢ = [vᵢ; bᵢ] into dst (2d).
func (o *Online) zInto(dst []float64, i int) {
	d := o.p.Dim
	copy(dst[:d], o.p.V[i*d:(i+1)*d])
	copy(dst[d:2*d], o.p.brows()[i*d:(i+1)*d])
}

// normStep runs the exact normaliser's schedule at the start of basket
// o.pos: the pending result takes effect if this is its position, and a new
// job is launched every FactorEvery baskets. It reports false if A stayed
// singular after a recomputation of G from scratch (divergence).
func (o *Online) normStep() bool {
	np := o.np
	if np.kzAt == o.pos {
		// Second stage: K zᵢ of the changed columns from their current z,
		// halfway to the result's position.
		np.wait()
		np.kzAt = 0
		if np.job.ok {
			j, m := &np.job, 2*o.p.Dim
			j.z1 = resize(j.z1, len(j.items)*m)
			for r, i := range j.items {
				o.zInto(j.z1[r*m:(r+1)*m], i)
			}
			np.flying = true
			np.w.submit(np.kzFn)
		}
	}
	if np.swapAt == o.pos {
		np.wait()
		if !o.applyJob() {
			return false
		}
	}
	if o.factored && (o.pos-1)%int64(o.opt.FactorEvery) != 0 {
		return true
	}
	sync := !o.factored || np.lag == 0
	np.job.kzLater = !sync && np.lag >= 2
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
	if np.job.kzLater {
		np.kzAt = o.pos + int64(np.lag/2)
	}
	return true
}

// applyJob makes the finished job's result active. A failed job (A singular
// after rounding drift of G) is redone at once from all current columns.
func (o *Online) applyJob() bool {
	np := o.np
	o.flushNormC()
	if !np.job.ok {
		o.snapshotAll()
		np.job.kzLater = false
		np.run()
		o.lastRefresh = o.pos
		if !np.job.ok {
			np.swapAt = 0
			return false
		}
	}
	np.takeEffect()
	return true
}

// snapshot fills the next job (its kzLater already set) from the current
// parameters: the columns changed since the last snapshot (all columns
// every RefreshEvery baskets, or when so many changed that recomputing G is
// cheaper), and C. The changed columns' old values are copied only for an
// incremental update, their current ones only if this job computes their
// K zᵢ or updates G by them (a second-stage job takes them afresh).
func (o *Online) snapshot() {
	np, p := o.np, o.p
	m := 2 * p.Dim
	j := &np.job
	j.items = append(j.items[:0], o.dirtyList...)
	for _, i := range j.items {
		o.dirty[i] = false
	}
	o.dirtyList = o.dirtyList[:0]
	j.c = append(j.c[:0], o.c...)
	// Two full 2d×2d rank-1 updates per changed column (8d² each) cost more
	// than the upper triangle of ZᵀZ (about 2d²·n).
	refresh := o.pos-o.lastRefresh >= int64(o.opt.RefreshEvery)
	j.full = refresh || 4*len(j.items) >= p.N
	if refresh {
		o.lastRefresh = o.pos
	}
	if j.full {
		o.fillAll()
	} else {
		j.z0 = resize(j.z0, len(j.items)*m)
		for r, i := range j.items {
			copy(j.z0[r*m:(r+1)*m], o.z0[i*m:(i+1)*m])
		}
	}
	if !j.full || !j.kzLater {
		j.z1 = resize(j.z1, len(j.items)*m)
		for r, i := range j.items {
			o.zInto(j.z1[r*m:(r+1)*m], i)
		}
	}
}

// snapshotAll makes the job recompute G from all current columns (its
// precomputed items are kept).
func (o *Online) snapshotAll() {
	j, m := &o.np.job, 2*o.p.Dim
	j.z1 = resize(j.z1, len(j.items)*m)
	for r, i := range j.items {
		o.zInto(j.z1[r*m:(r+1)*m], i)
	}
	j.c = append(j.c[:0], o.c...)
	j.full = true
	o.fillAll()
}

// fillAll copies V and B whole for the job (interleave builds Z from them).
func (o *Online) fillAll() {
	j, n, d := &o.np.job, o.p.N, o.p.Dim
	j.n = n
	j.vAll = append(j.vAll[:0], o.p.V[:n*d]...)
	j.bAll = append(j.bAll[:0], o.p.brows()[:n*d]...)
}

// interleave builds the job's Z (row i = [vᵢ; bᵢ]) from its copies of V
// and B.
func (np *normPipe) interleave() {
	j, d := &np.job, np.d
	m := 2 * d
	j.zAll = resize(j.zAll, j.n*m)
	for i := 0; i < j.n; i++ {
		copy(j.zAll[i*m:i*m+d], j.vAll[i*d:(i+1)*d])
		copy(j.zAll[i*m+d:(i+1)*m], j.bAll[i*d:(i+1)*d])
	}
}

// resize returns s with length n, reallocated if its capacity is short.
func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// normGradRow returns K zᵢ of item i for the active factorisation (see
// normPipe.kzRow).
func (o *Online) normGradRow(i int) []float64 {
	np := o.np
	if np.kzGen[i] == np.gen {
		m := 2 * np.d
		return np.kz[i*m : (i+1)*m]
	}
	z := o.ss.z
	o.zInto(z, i)
	return np.kzRow(i, z)
}
