package exactnorm

import (
	"sync"
	"sync/atomic"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/learn/internal/vecmat"
)

// Pipe is the online learner's exact normaliser. Every so often the
// learner submits a snapshot taken at its position p — the columns
// zᵢ = [vᵢ; bᵢ] changed since the previous snapshot, their current values,
// and C — and the pipe brings G up to date (a symmetric rank-k update by
// the changed columns, or G = ZᵀZ anew), factors A = I + WG and forms K and
// ∂/∂C (Work.Factor). The result takes effect at position p + lag (Due,
// Take), whenever and by whichever goroutine the job was computed, so the
// learner's parameters never depend on scheduling: with lag 0 every
// snapshot is factored at once.
//
// The pipe keeps every column's value at the last snapshot, so a
// snapshot copies only the changed columns: the job updates G by
// zᵢzᵢᵀ − zsᵢzsᵢᵀ and stores zᵢ. G is recomputed from scratch when so many
// columns changed that doing so is cheaper than updating it, and, to bound
// the rounding drift of the updates, once refreshEvery positions and as
// many column updates as there are items have passed since the last
// recomputation.
//
// Between Start and Stop a goroutine of the pipe's runs submitted jobs
// while the learner goes on; it blocks on a channel between jobs. A job
// that goroutine has not started when its result is needed (and every job
// outside Start…Stop) is run by the learner's goroutine. When the learner
// needs the result of a job the other goroutine is running, it does not
// idle while G is recomputed from scratch: on the pure-Go backend the
// recomputation is offered in units of rows of G (blas.SyrkPart), and the
// learner computes those not yet claimed before it blocks for the rest.
// The results are the same bits whoever computes them.
//
// A Pipe is used by one goroutine (the learner's), apart from the job
// goroutine it starts itself.
type Pipe struct {
	d, lag       int
	refreshEvery int64
	n            int // items (rows of zs)

	w    *Work     // G, and the next result
	zs   []float64 // n×2d: row i = zᵢ at the last snapshot (G = Σ zᵢzᵢᵀ over the rows)
	zold []float64 // the changed columns' previous values, as rows
	job  job

	lastRefresh int64 // position of the last recomputation of G
	updates     int64 // column updates of G since then
	swapAt      int64 // position where the submitted job's result takes effect (0: none pending)

	// The submitted job's hand-over: claim is jobPosted, jobClaimed or
	// jobNone; whichever goroutine moves it from jobPosted to jobClaimed
	// runs the job and closes done.
	flying bool // a job was submitted and not waited for
	claim  atomic.Int32
	done   chan struct{}
	wake   chan struct{} // a job was posted (non-nil between Start and Stop)
	wg     sync.WaitGroup

	// A recomputation of G on offer to the goroutine waiting for the job
	// (nil when none): the job's runner stores it and signals offer.
	gram          atomic.Pointer[gramTask]
	offer         chan struct{}
	gyRun, gyHelp []float64 // the runner's and the helper's scratch
	helped        int64     // units of G the waiting goroutine computed (for tests)
	ranOwn        int64     // jobs the waiting goroutine found unstarted and ran (for tests)

	// Active: the result in effect.
	k, gc  []float64
	logDet float64
	gen    int64 // results taken into effect so far
}

// job is one refactorisation: its snapshot (inputs) and its result.
type job struct {
	// full recomputes G from all columns of zs (after the changed ones are
	// written) instead of updating it by the changed columns.
	full bool
	// items are the columns changed since the previous snapshot and z1
	// their current values (len(items)×2d).
	items []int
	z1    []float64
	c     []float64 // C at the snapshot (d×d)
	// zs is the pipe's snapshot rows as they were at the snapshot (the job
	// reads and writes rows below len(zs) only; Grow appends rows beyond
	// them while the job runs).
	zs []float64
	ok bool // A was non-singular; the pipe's Work holds the result
}

const (
	jobNone = iota
	jobPosted
	jobClaimed
)

// NewPipe returns a pipe for rank d whose results take effect lag
// positions after their snapshot, recomputing G as described with Pipe
// (refreshEvery ≥ 1). It has no items, G = 0 and no result in effect.
func NewPipe(d, lag, refreshEvery int) *Pipe {
	m := 2 * d
	return &Pipe{d: d, lag: lag, refreshEvery: int64(refreshEvery), w: NewWork(d),
		k: make([]float64, m*m), gc: make([]float64, d*d), offer: make(chan struct{}, 1)}
}

// Lag returns the positions between a snapshot and its result.
func (p *Pipe) Lag() int { return p.lag }

// Grow extends the pipe to n items, with the snapshot rows of the new
// items zero (not in G yet: the caller submits non-zero columns as
// changed). Rows are appended beyond those of the job in flight, which
// keeps running, unless the rows must move to a larger array: then the job
// is waited for first (amortised over doublings).
func (p *Pipe) Grow(n int) {
	m := 2 * p.d
	if n <= p.n {
		return
	}
	p.n = n
	if cap(p.zs) < n*m {
		p.wait() // the job writes rows of the array it was given
		zs := make([]float64, len(p.zs), max(n*m, 2*cap(p.zs)))
		copy(zs, p.zs)
		p.zs = zs
	}
	lo := len(p.zs)
	p.zs = p.zs[:n*m]
	clear(p.zs[lo:])
}

// SetColumns makes the snapshot rows those of all n items, row i written
// by z(dst, i), and recomputes G from them.
func (p *Pipe) SetColumns(n int, z func(dst []float64, i int)) {
	p.Grow(n)
	m := 2 * p.d
	for i := range n {
		z(p.zs[i*m:(i+1)*m], i)
	}
	p.w.Gram(p.zs, n)
}

// Column returns item i's row at the last snapshot (2d floats, the pipe's
// own: a caller restoring a state may write it while no job is in flight).
func (p *Pipe) Column(i int) []float64 {
	m := 2 * p.d
	return p.zs[i*m : (i+1)*m : (i+1)*m]
}

// NextColumns returns the rows, k×2d, that the next Submit takes as the
// changed columns' current values: the caller writes them in place (the
// pipe's own; valid until that Submit). The previous job's result must
// have been taken (Take).
func (p *Pipe) NextColumns(k int) []float64 {
	if p.flying {
		panic("exactnorm: NextColumns while a job is in flight")
	}
	j := &p.job
	if n := k * 2 * p.d; cap(j.z1) < n {
		j.z1 = make([]float64, n)
	} else {
		j.z1 = j.z1[:n]
	}
	return j.z1
}

// Submit hands the pipe the snapshot at position pos: the changed columns
// items, whose current values the caller has written in the rows of
// NextColumns(len(items)), and C (d×d, copied). The job runs at once when
// now is set or the lag is 0 (its result is then due at pos), else its
// result is due at pos + lag. The previous job's result must have been
// taken (Take).
func (p *Pipe) Submit(pos int64, items []int, c []float64, now bool) {
	if p.flying {
		panic("exactnorm: job submitted while one is in flight")
	}
	m := 2 * p.d
	j := &p.job
	if len(j.z1) != len(items)*m {
		panic("exactnorm: Submit's columns are not those of NextColumns")
	}
	j.items = append(j.items[:0], items...)
	j.c = append(j.c[:0], c...)
	// Two full 2d×2d rank-1 updates per changed column (8d² each) cost more
	// than the upper triangle of ZᵀZ (about 2d²·n).
	p.updates += int64(len(items))
	refresh := pos-p.lastRefresh >= p.refreshEvery && p.updates >= int64(p.n)
	j.full = refresh || 4*len(items) >= p.n
	if j.full {
		p.lastRefresh, p.updates = pos, 0
	}
	j.zs = p.zs
	if now || p.lag == 0 {
		p.run()
		p.swapAt = pos
		return
	}
	p.swapAt = pos + int64(p.lag)
	p.flying = true
	p.done = make(chan struct{})
	p.claim.Store(jobPosted)
	if p.wake != nil {
		select {
		case p.wake <- struct{}{}:
		default: // a wake-up is pending already: it finds this job
		}
	}
}

// Due reports whether a submitted job's result takes effect at pos.
func (p *Pipe) Due(pos int64) bool { return p.swapAt != 0 && p.swapAt == pos }

// Take waits for the submitted job and makes its result active, at
// position pos. A job that failed (A singular after rounding drift of G)
// is redone at once from all n current columns, row i written by
// z(dst, i) in order of i, and the current C (G recomputed, counted as a
// recomputation at pos); Take reports false, with no result pending, if
// that fails too (divergence).
func (p *Pipe) Take(pos int64, z func(dst []float64, i int), c []float64) bool {
	p.wait()
	if !p.job.ok {
		m := 2 * p.d
		for i := range p.n {
			z(p.zs[i*m:(i+1)*m], i)
		}
		j := &p.job
		j.items = j.items[:0]
		j.c = append(j.c[:0], c...)
		j.full = true
		j.zs = p.zs
		p.run()
		p.lastRefresh, p.updates = pos, 0
		if !j.ok {
			p.swapAt = 0
			return false
		}
	}
	w := p.w
	p.k, w.K = w.K, p.k
	p.gc, w.GC = w.GC, p.gc
	p.logDet = w.LogDet
	p.gen++
	p.swapAt = 0
	return true
}

// K returns the active gradient map K (2d×2d, symmetric; the pipe's own).
func (p *Pipe) K() []float64 { return p.k }

// GC returns the active ∂/∂C (d×d; the pipe's own).
func (p *Pipe) GC() []float64 { return p.gc }

// LogDet returns the active log det(I + WG).
func (p *Pipe) LogDet() float64 { return p.logDet }

// Gen returns the number of results taken into effect.
func (p *Pipe) Gen() int64 { return p.gen }

// run executes the job on the caller's goroutine.
func (p *Pipe) run() {
	j, w := &p.job, p.w
	m := 2 * p.d
	zs := j.zs
	if k := len(j.items); !j.full && k > 0 {
		p.zold = resize(p.zold, k*m)
		for r, i := range j.items {
			copy(p.zold[r*m:(r+1)*m], zs[i*m:(i+1)*m])
		}
		w.update(p.zold, j.z1, k)
	}
	for r, i := range j.items {
		copy(zs[i*m:(i+1)*m], j.z1[r*m:(r+1)*m])
	}
	if j.full {
		p.gramShared(zs, len(zs)/m)
	}
	j.ok = w.Factor(j.c)
}

// gramShared recomputes G from the n rows of zs (Work.Gram), with its
// units on offer to the goroutine that waits for the job (wait) on the
// pure-Go backend, whose Syrk SyrkPart splits; the runner computes every
// unit nobody else claims and blocks until those claimed are done.
func (p *Pipe) gramShared(zs []float64, n int) {
	m := 2 * p.d
	if n == 0 || m < 4 || !blas.SyrkGoPath() {
		p.w.Gram(zs, n)
		return
	}
	t := newGramTask(zs, n, m, p.w.G)
	p.gram.Store(t)
	select {
	case p.offer <- struct{}{}:
	default: // an offer is pending already: the waiter finds this one
	}
	p.gyRun, _ = t.work(p.gyRun)
	<-t.fin
	p.gram.Store(nil)
	p.w.symmetrize()
}

// runPosted runs the posted job if no goroutine has claimed it.
func (p *Pipe) runPosted() bool {
	if !p.claim.CompareAndSwap(jobPosted, jobClaimed) {
		return false
	}
	p.run()
	close(p.done)
	return true
}

// wait returns when the submitted job, if any, has finished: it runs the
// job itself if the pipe's goroutine has not started it, else blocks until
// that goroutine has finished it.
func (p *Pipe) wait() {
	if !p.flying {
		return
	}
	if p.runPosted() {
		p.ranOwn++
	} else {
		// The other goroutine runs the job: compute the units of G it
		// offers until the job is done.
		for done := false; !done; {
			select {
			case <-p.done:
				done = true
			case <-p.offer:
				if t := p.gram.Load(); t != nil {
					var units int
					p.gyHelp, units = t.work(p.gyHelp)
					p.helped += int64(units)
				}
			}
		}
	}
	p.claim.Store(jobNone)
	p.flying = false
}

// Start starts the goroutine that runs submitted jobs while the learner
// goes on (no effect if it runs). Stop ends it.
func (p *Pipe) Start() {
	if p.wake != nil {
		return
	}
	wake := make(chan struct{}, 1)
	p.wake = wake
	p.wg.Go(func() {
		for range wake {
			p.runPosted()
		}
	})
	if p.flying {
		wake <- struct{}{}
	}
}

// Stop ends the goroutine of Start and returns when it has ended (a job it
// is running finishes first; a job it has not started stays submitted,
// for the learner's goroutine to run when its result is needed).
func (p *Pipe) Stop() {
	if p.wake == nil {
		return
	}
	close(p.wake)
	p.wg.Wait()
	p.wake = nil
}

// State is the pipe's state as a checkpoint stores it. Its slices are the
// pipe's own (not copied) when returned by State.
type State struct {
	Gram, K, GC []float64 // G, and the active K and ∂/∂C
	LogDet      float64
	Gen         int64
	LastRefresh int64 // position of the last recomputation of G
	Updates     int64 // column updates of G since then
	// SwapAt is the position where the submitted job's result takes
	// effect (0: none pending); PendOK reports that it succeeded, and
	// then PendK, PendGC and PendLogDet are its result.
	SwapAt        int64
	PendOK        bool
	PendK, PendGC []float64
	PendLogDet    float64
}

// State waits for the job in flight, if any (its result stays pending),
// and returns the pipe's state.
func (p *Pipe) State() State {
	p.wait()
	s := State{Gram: p.w.G, K: p.k, GC: p.gc, LogDet: p.logDet, Gen: p.gen,
		LastRefresh: p.lastRefresh, Updates: p.updates, SwapAt: p.swapAt}
	if p.swapAt != 0 {
		s.PendOK = p.job.ok
		if p.job.ok {
			s.PendK, s.PendGC, s.PendLogDet = p.w.K, p.w.GC, p.w.LogDet
		}
	}
	return s
}

// SetState restores a state returned by State (the slices are copied;
// the snapshot rows are restored by the caller, Column). No job may be in
// flight.
func (p *Pipe) SetState(s State) {
	p.wait()
	copy(p.w.G, s.Gram)
	copy(p.k, s.K)
	copy(p.gc, s.GC)
	p.logDet, p.gen, p.lastRefresh, p.updates = s.LogDet, s.Gen, s.LastRefresh, s.Updates
	p.swapAt = s.SwapAt
	if s.SwapAt != 0 {
		p.job.ok = s.PendOK
		if s.PendOK {
			copy(p.w.K, s.PendK)
			copy(p.w.GC, s.PendGC)
			p.w.LogDet = s.PendLogDet
		}
	}
}

// KZ computes K zᵢ of the active K for the nq ≤ 4 rows zᵢ of zq (4×2d)
// into the rows of kzq (4×2d): one pass over K for two or more
// (f64.GemvT4; the rows of zq past nq hold any values, and their products
// are dropped), a single one by vecmat.One. Which kernel computes a row
// depends on nq only, so callers fix it by how they group items.
func (p *Pipe) KZ(zq, kzq []float64, nq int) {
	m := 2 * p.d
	switch {
	case nq > 1:
		f64.GemvT4(m, m, p.k, m, zq, m, 1, kzq, m)
	case nq == 1:
		vecmat.One(kzq[:m], p.k, m, m, zq[:m], 1) // K is symmetric
	}
}

// SwapAt returns the position where the submitted job's result takes
// effect (0: none pending).
func (p *Pipe) SwapAt() int64 { return p.swapAt }

// Running reports whether the goroutine of Start runs.
func (p *Pipe) Running() bool { return p.wake != nil }

// FailPending makes the pending result (one must be pending) a failed
// job's, as a singular A after rounding drift of G would: Take then redoes
// it from all current columns. For tests of that path.
func (p *Pipe) FailPending() {
	if p.swapAt == 0 {
		panic("exactnorm: FailPending without a pending result")
	}
	p.wait()
	p.job.ok = false
}
