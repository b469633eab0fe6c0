package detcache

import (
	"math"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Numerical rules of Fast (see the package documentation).
const (
	// ZeroCancelFactor is τ in Fast's zero rule: a determinant ratio r
	// computed as a sum of terms whose absolute values add up to mag, with
	// error bound err, is zero when |r| + err ≤ τ·ε·min(mag, N) (ε = 2⁻⁵²,
	// N the ratio's natural scale): it is below the rounding noise of its
	// own computation, and S' is numerically singular relative to the
	// norms of its items.
	ZeroCancelFactor = 64
	// FallbackErr bounds the relative error of a value Fast returns from
	// the identities: a ratio r is used when its first-order error bound
	// err (rounding of the sums, errors of the kernel entries, and errors
	// of M⁻¹, p and q of order γ = GammaSafety·ε·Σκ) satisfies
	// err ≤ FallbackErr·r. Any other ratio that is not clearly zero (in
	// particular a small or negative one) is recomputed with a fresh LU,
	// counted in Stats.Fallbacks: near-zero values then follow ndpp's zero
	// rule, like Naive's, instead of returning digits lost to cancellation.
	FallbackErr = 1e-7
	// MaxCond is the largest 1-norm condition number of the equilibrated
	// kernel Λ⁻¹L_SΛ⁻¹ (Λ = diag(‖zᵢ‖), see itemNorm2) for which Fast
	// answers from M⁻¹.
	// Beyond it, and while L_S is singular, every value is computed with a
	// fresh LU (direct mode, counted in Stats.Fallbacks) until an accepted
	// change makes L_S well-conditioned again.
	MaxCond = 1e8
	// GammaSafety multiplies the first-order error bounds (γ = κ·ε per
	// update) to cover the dimension factors they leave out.
	GammaSafety = 4
	// RefactorEvery is the number of low-rank updates of M⁻¹ after which
	// Fast refactors L_S from scratch and records the drift in Stats. It
	// also refactors as soon as Σκ since the last refactor exceeds
	// RefactorEvery times the current κ (a badly conditioned past).
	RefactorEvery = 64
)

const eps = 0x1p-52

// Fast is the incremental oracle. For the current solution S (k = |S|) it
// keeps M = L_S, M⁻¹, log det M, and the rows vᵢ and bᵢᵀC of S's items, so
// that for an arriving item t, Prepare costs O(kd + k²), AddValue O(1),
// SwapValues O(k) for all k swaps, and PairSwapValue O(1) per pair of
// positions. Accepted changes update M⁻¹ in O(k²) (bordering for Add, a
// division-free rank-2 formula for Swap, two of them for PairSwap), with a
// full refactor every RefactorEvery updates. The identities are those of
// docs/math.md in the repository ("The fast swap oracle").
//
// # Identities and updates
//
// With M = L_S (k×k), M⁻¹ and log det M kept, an arriving item t gives
// u = L_{S,t}, w = L_{t,S}, p = M⁻¹u, qᵀ = wᵀM⁻¹ and the Schur complement
// s = L_tt − wᵀM⁻¹u. Because C is skew, with a = V_Sᵀv_t and c = B_SᵀCb_t
// (rows bᵢᵀC are kept), u = a + c and w = a − c: O(kd), then O(k²) for p,
// q and s (Prepare). The diagonal enters the diagonal entries only:
// L_tt = δ_t + v_t·v_t (b_tᵀCb_t = 0), and M's diagonal; u, w and Σ_xy
// (x ≠ y) are off-diagonal entries and do not see it. Then
//
//	add:        det L_{S+t} / det M = s
//	swap j→t:   det L_{S−j+t} / det M = s·(M⁻¹)_jj + p_j q_j           (Jacobi)
//	pair R→X:   det L_{S−R+X} / det M = det [[(M⁻¹)_RR, P_R], [−Q_R, Σ]]
//
// with, for R = {a, b} and X = {x, y}, P = [p_x p_y], Q = [q_xᵀ; q_yᵀ] and
// Σ = L_XX − L_{X,S}M⁻¹L_{S,X} (Σ_xx = s_x, Σ_xy = L_xy − w_x·p_y): a 4×4
// determinant per pair of positions, O(1) after O(d + k) per pair of
// candidates. At k = 2d, when no item of S has a diagonal entry, Σ_xy is
// exactly zero, and so is s when t has none either (those rows and columns
// of L have rank ≤ 2d): they are then set so, which removes their rounding
// noise from the swap values. Otherwise sets larger than 2d can have
// non-zero determinants, and s and Σ are computed like any other.
//
// Accepted changes update M⁻¹ in O(k²): Add by the bordered inverse
// [[M⁻¹ + pqᵀ/s, −p/s], [−qᵀ/s, 1/s]]; Swap by the inverse of L_{S+t} with
// index j deleted, scaled by s so that it never divides by s (it holds when
// L_{S+t} is singular, e.g. at k = 2d without a diagonal): with
// m = (M⁻¹)_jj, α and β column and row j of M⁻¹ and r the swap ratio,
//
//	M'⁻¹_il = M⁻¹_il + p_i (m q_l − q_j β_l)/r − α_i (s β_l + p_j q_l)/r   (i, l ≠ j)
//	M'⁻¹_ij = (α_i p_j − p_i m)/r,  M'⁻¹_jl = (q_j β_l − q_l m)/r,  M'⁻¹_jj = m/r;
//
// PairSwap by two such swaps, in the order whose intermediate set is
// further from singular (or a refactor when neither is safe). A general
// Woodbury update was measured to lose accuracy as κ² and is not used.
// Every RefactorEvery updates, and earlier when the accumulated conditioning
// calls for it, L_S is refactored from scratch (LU, O(k³)) and the drift of
// M⁻¹ and of log det M is recorded in Stats.MaxDrift and
// Stats.MaxLogDetDrift.
//
// # Numerical rules
//
// Naive uses ndpp's zero rule: a set is zero when its kernel, equilibrated
// by the item norms ‖zᵢ‖ = (‖vᵢ‖² + ‖bᵢ‖² + δᵢ)^½, has reciprocal condition
// number below ndpp.ZeroRcondFactor·|S|·ε, or |S| > MaxRank. The norms
// include δᵢ because ‖zᵢ‖² stands for the size of L_ii = δᵢ + ‖vᵢ‖²; Fast
// uses the same norms in its equilibration and error bounds.
//
// Fast computes each ratio r with the magnitude mag of the terms that
// cancel in it and a first-order bound err on its error: ε·mag for the
// final sums, the kernel entries' own errors (ε·(1 + ‖C‖_F)·‖zᵢ‖‖zⱼ‖, the
// cancellation between vᵢ·vⱼ and bᵢᵀCbⱼ, and on the diagonal the addition
// of δᵢ, both below it as δᵢ ≤ ‖zᵢ‖²), and the errors of M⁻¹, p and q,
// γ times their norm-wise sizes, with γ = GammaSafety·ε·Σκ summed over the
// updates since the last refactor (κ = max(κ₁(E), (1 + ‖C‖_F)·‖E⁻¹‖₁) for
// the equilibrated E = Λ⁻¹L_SΛ⁻¹, Λ = diag(‖zᵢ‖)). Then
//
//   - r is a value when err ≤ FallbackErr·r (relative error below 1e-7 by
//     the bound; the value adds log r to log det M, which itself carries the
//     errors of the ratios accepted since the last refactor, measured by
//     Stats.MaxLogDetDrift);
//   - r is zero when |r| + err ≤ ZeroCancelFactor·ε·min(mag, N), N the
//     natural scale of the ratio (its value if the equilibrated determinant
//     of S' were 1): the ratio is below the rounding noise of its own
//     computation and S' is numerically singular relative to its items;
//   - otherwise the value is computed with a fresh LU of L_{S'} (ndpp's
//     zero rule, with the exact 1-norm condition number, in the oracle's
//     buffers) and counted in Stats.Fallbacks.
//
// While L_S is singular or its κ exceeds MaxCond, Fast is in direct mode:
// every value is computed with a fresh LU (counted as fallbacks) until an
// accepted change makes L_S well-conditioned again. So Fast returns from
// the identities only values whose error bound it can vouch for; near zero
// both implementations apply ndpp's rule and can differ only for sets
// within rounding of the threshold. The tests measure, on thousands of
// random and ill-conditioned operation sequences, |Δ log det| against a
// fresh LU (and against 256-bit arithmetic where the fresh LU is itself
// inaccurate) and log the largest.
//
// The hot path (Prepare, AddValue, SwapValues, PairSwapValue) allocates
// nothing, fallbacks included.
//
// A Fast is not safe for concurrent use; the model it reads may be shared.
type Fast struct {
	m       *ndpp.Model // nil for an oracle of a vector kernel
	kern    ndpp.Kernel
	d, cap  int
	maxRank int  // larger sets have determinant zero
	hasDiag bool // L = D + VᵀV + BᵀCB

	items       []int
	vs, bs, bcs []float64 // cap×d; row i = v_{S_i}, b_{S_i}, b_{S_i}ᵀC
	deltas      []float64 // δ_{S_i}
	mk, inv     []float64 // cap×cap, leading dimension cap: M = L_S and M⁻¹
	znorm       []float64 // ‖z_{S_i}‖ (see itemNorm2)
	izn         []float64 // 1/‖z_{S_i}‖
	logz2       []float64 // log ‖z_{S_i}‖²
	logDetE     float64   // log det of the equilibrated L_S: logDet − Σ logz2
	logDet      float64   // log det M (normal mode)
	gamma       float64   // error scale of M⁻¹: GammaSafety·ε·kacc
	kacc        float64   // Σ κ(equilibrated L_S) over the updates since the last refactor
	einv        float64   // ‖E⁻¹‖₁ of the equilibrated L_S (E = Λ⁻¹L_SΛ⁻¹)
	cw          float64   // 1 + ‖C‖_F: kernel entry errors are ≤ d·ε·cw·‖zᵢ‖‖zⱼ‖
	skew        bool      // C_lk = −C_kl exactly: bᵀCb = 0 for every b
	skewErr     float64   // 4dε·cw: |computed bᵀC·b| ≤ skewErr·‖b‖² when skew
	scale       float64   // ItemCheck's scale factor 1 + d·max|C|
	direct      bool      // L_S singular or ill-conditioned: values by fresh LU
	value       ndpp.Value
	version     uint64
	stamp       uint64
	since       int    // low-rank updates since the last refactor
	chgN        int    // positions changed by the last update (−1: all)
	chgPos      [2]int // those positions
	stats       Stats
	dprint      diagPrint // the diagonal's fingerprint in states

	// Scratch, sized at construction.
	set     []int
	setRows []row     // the rows of set's items
	lu, tmp []float64 // cap×cap
	piv     []int
	col     []float64 // cap
	wa, wb  []float64 // cap: column and row j of M⁻¹ in swapUpdate
	wx, wy  []float64 // cap: g and h in swapUpdate
	inner   *Cand     // the second item of a pair swap
	// Fallback buffers, (cap+1)×(cap+1) and cap+1.
	da, dlu, dinv, dz []float64
	dpiv              []int
	lbuf              []float64 // rowsValue's buffer
}

var _ Oracle = (*Fast)(nil)

// NewFast returns an empty incremental oracle for solutions of at most
// capacity items. It returns an error for a nil model and for capacity < 1,
// capacity > n or capacity > m.MaxRank() (2d, or d when B = V, for a model
// without a diagonal: every larger set has determinant zero).
func NewFast(m *ndpp.Model, capacity int) (*Fast, error) {
	if err := checkCapacity(m, capacity); err != nil {
		return nil, err
	}
	o := newFast(ndpp.KernelOf(m), capacity, m.MaxRank())
	o.m = m
	return o, nil
}

// NewFastKernel returns an empty incremental oracle for items given as
// vectors (PrepareItem, ScoreBlockItems) of the kernel k, for solutions of
// at most capacity items. It keeps copies of the vectors of S and of C:
// memory O(capacity·d + d²), whatever the number of items streamed. It
// returns an error for an invalid kernel (ndpp.Kernel.Check), capacity < 1 and,
// without a diagonal, capacity above the rank bound (2d, or d when B = V).
func NewFastKernel(k ndpp.Kernel, capacity int) (*Fast, error) {
	if err := checkKernelCapacity(k, capacity); err != nil {
		return nil, err
	}
	k.C = append([]float64(nil), k.C...)
	return newFast(k, capacity, k.MaxRank(-1)), nil
}

func newFast(k ndpp.Kernel, capacity, maxRank int) *Fast {
	d, c := k.D, capacity
	o := &Fast{kern: k, d: d, cap: c, maxRank: maxRank, hasDiag: k.Diag,
		items: make([]int, 0, c),
		vs:    make([]float64, c*d), bs: make([]float64, c*d), bcs: make([]float64, c*d),
		deltas: make([]float64, c), setRows: make([]row, 0, c+1),
		mk: make([]float64, c*c), inv: make([]float64, c*c),
		znorm: make([]float64, c), izn: make([]float64, c), logz2: make([]float64, c),
		set: make([]int, 0, c+1),
		lu:  make([]float64, c*c), tmp: make([]float64, c*c),
		piv: make([]int, c), col: make([]float64, c),
		da: make([]float64, (c+1)*(c+1)), dlu: make([]float64, (c+1)*(c+1)),
		dinv: make([]float64, (c+1)*(c+1)), dz: make([]float64, c+1), dpiv: make([]int, c+1),
		wa: make([]float64, c), wb: make([]float64, c),
		wx: make([]float64, c), wy: make([]float64, c),
	}
	o.cw = 1 + math.Sqrt(blas.Dot(k.C, k.C))
	// With C exactly skew-symmetric, bᵀCb = 0, and the term PrepareItem
	// computes, Σ_k fl(bᵀC)_k·b_k, is within 2γ_d·|b|ᵀ|C||b| ≤
	// 2dε(1 + O(ε))·‖C‖_F·‖b‖² of it: skewErr bounds it with a factor 2 to
	// spare.
	o.skew = exactlySkew(k.C, d)
	o.skewErr = 4 * float64(d) * eps * o.cw
	o.scale = ndpp.NewItemCheck(k).Scale()
	o.inner = o.NewCand()
	o.inner.owner = o
	o.setCond(1, 1, true)
	return o
}

// exactlySkew reports whether c (d×d, row-major) has c_lk = −c_kl for
// every l, k (so a zero diagonal).
func exactlySkew(c []float64, d int) bool {
	for l := 0; l < d; l++ {
		for k := l; k < d; k++ {
			if c[l*d+k] != -c[k*d+l] {
				return false
			}
		}
	}
	return true
}

// Model returns the model the oracle scores against (nil for an oracle of
// a vector kernel).
func (o *Fast) Model() *ndpp.Model { return o.m }

// Cap returns the largest solution size.
func (o *Fast) Cap() int { return o.cap }

// Reset empties the solution; statistics are kept.
func (o *Fast) Reset() {
	o.items = o.items[:0]
	o.value = ndpp.Value{}
	o.logDet, o.logDetE = 0, 0
	o.direct = false
	o.since = 0
	o.setCond(1, 1, true)
	o.version++
	o.chgN = -1
}

// Len returns |S|.
func (o *Fast) Len() int { return len(o.items) }

// Items returns S in position order (a view; do not modify).
func (o *Fast) Items() []int { return o.items }

// Value returns the value of S (Log 0 for the empty set).
func (o *Fast) Value() ndpp.Value { return o.value }

// Direct reports whether the oracle is in direct mode: L_S is singular or
// too ill-conditioned (see MaxCond) for M⁻¹, and every value is computed
// with a fresh LU.
func (o *Fast) Direct() bool { return o.direct }

// NewCand returns an unprepared Cand with buffers for this oracle.
func (o *Fast) NewCand() *Cand {
	return &Cand{item: -1, dup: -1,
		u: make([]float64, o.cap), w: make([]float64, o.cap),
		p: make([]float64, o.cap), q: make([]float64, o.cap)}
}

// Kernel returns the kernel description (for a model-backed oracle, the
// model's; its C must not be modified).
func (o *Fast) Kernel() ndpp.Kernel { return o.kern }

// N returns the model's number of items, or −1 for an oracle of a vector
// kernel.
func (o *Fast) N() int {
	if o.m == nil {
		return -1
	}
	return o.m.N()
}

// sRow returns the row of S's item at position i (views of the copies).
func (o *Fast) sRow(i int) row {
	d := o.d
	return row{v: o.vs[i*d : (i+1)*d : (i+1)*d], b: o.bs[i*d : (i+1)*d : (i+1)*d],
		bc: o.bcs[i*d : (i+1)*d : (i+1)*d], delta: o.deltas[i]}
}

// ItemAt returns S's item at position pos: for a model-backed oracle the
// model's item, otherwise views of the oracle's copies, valid until S
// changes. It panics for pos out of range.
func (o *Fast) ItemAt(pos int) ndpp.Item {
	it := o.items[pos]
	if o.m != nil {
		return ndpp.ModelItem(o.m, it)
	}
	return o.sRow(pos).item(it, o.kern.Shared)
}

// Evals returns the number of candidate values produced.
func (o *Fast) Evals() int64 { return o.stats.Evals }

// Stats returns the counters.
func (o *Fast) Stats() Stats { return o.stats }
