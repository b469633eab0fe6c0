package ndpp

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
)

// ZeroRcondFactor sets the numerical zero rule for determinants. A kernel
// submatrix L_S, equilibrated by the item norms ‖zᵢ‖ = ‖[vᵢ; bᵢ]‖, whose
// estimated reciprocal 1-norm condition number is below
// ZeroRcondFactor·|S|·ε (ε = 2⁻⁵²) has a determinant indistinguishable from
// zero in float64: LogDet reports it as zero. So does any set larger than
// MaxRank (the rank bound: 2d, or d when B = V), and any computed
// determinant with a negative sign (det L_S ≥ 0 in exact arithmetic, so a
// negative value is rounding noise around zero).
const ZeroRcondFactor = 64

// IsZeroRcond applies the numerical zero rule to a reciprocal condition
// number of a k×k equilibrated matrix.
func IsZeroRcond(rcond float64, k int) bool {
	return !(rcond >= ZeroRcondFactor*float64(k)*eps) // NaN counts as zero
}

const eps = 0x1p-52

// LogDet returns log det L_S and its sign for the items S: sign is 1 when
// det L_S > 0 and 0 when it is zero under the numerical zero rule (see
// ZeroRcondFactor), in which case logDet is −Inf. The empty set is rejected
// (ErrEmptySet), as are out-of-range and duplicate items.
func (m *Model) LogDet(items []int) (logDet, sign float64, err error) {
	if err := m.CheckItems(items); err != nil {
		return 0, 0, err
	}
	k := len(items)
	if k > m.MaxRank() {
		return math.Inf(-1), 0, nil
	}
	buf := make([]float64, k*k+k)
	ld, s, ok := m.logDetInto(buf, items, 0)
	if !ok {
		return 0, 0, overflowError(items)
	}
	return ld, s, nil
}

// overflowError is the error of a set whose kernel overflows float64.
func overflowError(items []int) error {
	if len(items) > 8 {
		return fmt.Errorf("%w: L_S of the %d items %v… (see Model.CheckScale)", ErrOverflow, len(items), items[:8])
	}
	return fmt.Errorf("%w: L_S of the items %v (see Model.CheckScale)", ErrOverflow, items)
}

// LogDetEps returns log det(L_S + εI) and its sign, for ε ≥ 0: the
// regularised basket term of the NDPP learners and of the evaluation
// convention (ε = 1e-5, as in Gartrell et al.'s code). With ε > 0 the
// symmetric part of L_S + εI is at least εI, so the value is finite for
// every set, also for sets larger than the kernel's rank.
func (m *Model) LogDetEps(items []int, eps float64) (logDet, sign float64, err error) {
	if err := m.CheckItems(items); err != nil {
		return 0, 0, err
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return 0, 0, fmt.Errorf("ndpp: ε = %v; want finite and ≥ 0", eps)
	}
	k := len(items)
	if eps == 0 && k > m.MaxRank() {
		return math.Inf(-1), 0, nil
	}
	buf := make([]float64, k*k+k)
	ld, s, ok := m.logDetInto(buf, items, eps)
	if !ok {
		return 0, 0, overflowError(items)
	}
	return ld, s, nil
}

// logDetInto computes log det(L_S + εI) for validated items using buf
// (≥ k²+k). ok is false when the kernel's values overflow float64 (an
// item's ‖zᵢ‖² or an entry of L_S is not finite): the determinant is then
// unknown, not zero.
func (m *Model) logDetInto(buf []float64, items []int, eps float64) (logDet, sign float64, ok bool) {
	k := len(items)
	if eps == 0 && k > m.MaxRank() {
		return math.Inf(-1), 0, true
	}
	a, norm2 := buf[:k*k], buf[k*k:k*k+k]
	m.KernelInto(a, items)
	for p, it := range items {
		a[p*k+p] += eps
		norm2[p] = blas.Dot(m.ItemV(it), m.ItemV(it)) + blas.Dot(m.ItemB(it), m.ItemB(it)) + m.ItemDiag(it) + eps
	}
	return LogDetEquilibrated(a, norm2, k)
}

// LogDetEquilibrated returns log det A and its sign for a k×k kernel
// submatrix A = L_S (row-major, overwritten) of items whose squared norms
// ‖zᵢ‖² = vᵢ·vᵢ + bᵢ·bᵢ + δᵢ (plus any ε added to A's diagonal) are in
// norm2 (k entries, overwritten with 1/‖zᵢ‖). It factorises the
// equilibrated matrix Aᵢⱼ/(‖zᵢ‖‖zⱼ‖) (LogDetRaw, whose zero rule applies
// to it) and adds Σᵢ log ‖zᵢ‖²; an item with ‖zᵢ‖ = 0 makes the
// determinant zero (sign 0, log −Inf). ok is false when the values
// overflow float64 (a ‖zᵢ‖ or an equilibrated entry is not finite): the
// determinant is then unknown, not zero. It is the one equilibrated
// log-determinant of the model's sets and of the oracles' fresh
// factorisations.
func LogDetEquilibrated(a, norm2 []float64, k int) (logDet, sign float64, ok bool) {
	scale := norm2[:k]
	logScale := 0.0
	for p, z2 := range scale {
		z := math.Sqrt(z2)
		if z == 0 {
			return math.Inf(-1), 0, true
		}
		if math.IsInf(z, 0) {
			return 0, 0, false
		}
		scale[p] = 1 / z
		logScale += 2 * math.Log(z)
	}
	for r := 0; r < k; r++ {
		row := a[r*k : (r+1)*k]
		for c := range row {
			row[c] *= scale[r] * scale[c]
			if math.IsInf(row[c], 0) || math.IsNaN(row[c]) {
				return 0, 0, false
			}
		}
	}
	ld, s := LogDetRaw(a, k, logScale)
	return ld, s, true
}

// LogDetRaw factorises the row-major k×k matrix a (overwritten) and returns
// log det + offset and the sign under the numerical zero rule. a should be
// equilibrated (entries of order one) for the rule to be meaningful.
func LogDetRaw(a []float64, k int, offset float64) (logDet, sign float64) {
	var lu mat.LU
	lu.Factorize(mat.NewDense(k, k, a))
	if IsZeroRcond(1/lu.Cond(), k) {
		return math.Inf(-1), 0
	}
	ld, s := lu.LogDet()
	if s <= 0 || math.IsNaN(ld) || math.IsInf(ld, 0) {
		return math.Inf(-1), 0
	}
	return ld + offset, 1
}

// LogNormalizer returns log det(L + I_n), computed through Sylvester's
// identity det(I_n + ZᵀWZ) = det(I_2d + WG) with G = ZZᵀ the 2d×2d Gram
// matrix of the stacked item vectors zᵢ = [vᵢ; bᵢ] and W = blockdiag(I, C)
// (with a diagonal, see LogNormalizerDiag): O(n·d²) for G plus O(d³), and
// no inverse of C. The value is computed once per model and cached. It is
// NaN or ±Inf when the kernel's values overflow float64 (see CheckScale;
// LogLikelihood reports that as an error).
func (m *Model) LogNormalizer() float64 {
	m.normOnce.Do(func() { m.logNorm = LogNormalizerDiag(m.n, m.d, m.v, m.b, m.c, m.diag) })
	return m.logNorm
}

// LogNormalizerRows is LogNormalizer for raw row-major parameters (n×d vRows,
// bRows, d×d c), for learners that hold their own parameters.
func LogNormalizerRows(n, d int, vRows, bRows, c []float64) float64 {
	a := NormalizerMatrix(GramRows(n, d, vRows, bRows), d, c)
	var lu mat.LU
	lu.Factorize(a)
	ld, _ := lu.LogDet()
	return ld
}

// LogNormalizerDiag is LogNormalizerRows for the kernel D + VᵀV + BᵀCB with
// D = diag(δ) (nil: D = 0), through
//
//	log det(I + L) = Σᵢ log(1 + δᵢ) + log det(I_2d + W Z (I + D)⁻¹ Zᵀ):
//
// the Gram matrix is weighted by 1/(1 + δᵢ), still O(n·d²).
func LogNormalizerDiag(n, d int, vRows, bRows, c, diag []float64) float64 {
	if diag == nil {
		return LogNormalizerRows(n, d, vRows, bRows, c)
	}
	w := make([]float64, n)
	sum := 0.0
	for i, x := range diag {
		w[i] = 1 / (1 + x)
		sum += math.Log1p(x)
	}
	a := NormalizerMatrix(gramRows(n, d, vRows, bRows, w), d, c)
	var lu mat.LU
	lu.Factorize(a)
	ld, _ := lu.LogDet()
	return ld + sum
}

// GramRows returns G = ZZᵀ (2d×2d, symmetric, stored full) for
// zᵢ = [vᵢ; bᵢ], computed with one BLAS-3 call.
func GramRows(n, d int, vRows, bRows []float64) *mat.Dense {
	return gramRows(n, d, vRows, bRows, nil)
}

// gramRows is GramRows of the rows zᵢ·√wᵢ (w nil: all weights 1), that is
// Σᵢ wᵢ zᵢzᵢᵀ. bRows nil means B = V.
func gramRows(n, d int, vRows, bRows, w []float64) *mat.Dense {
	if bRows == nil {
		bRows = vRows
	}
	z := make([]float64, n*2*d)
	for i := 0; i < n; i++ {
		zi := z[i*2*d : (i+1)*2*d]
		copy(zi, vRows[i*d:(i+1)*d])
		copy(zi[d:], bRows[i*d:(i+1)*d])
		if w != nil {
			s := math.Sqrt(w[i])
			for k := range zi {
				zi[k] *= s
			}
		}
	}
	g := make([]float64, 4*d*d)
	blas64.Implementation().Dgemm(gblas.Trans, gblas.NoTrans, 2*d, 2*d, n, 1, z, 2*d, z, 2*d, 0, g, 2*d)
	return mat.NewDense(2*d, 2*d, g)
}

// NormalizerMatrix returns I_2d + W·G with W = blockdiag(I_d, C).
func NormalizerMatrix(g *mat.Dense, d int, c []float64) *mat.Dense {
	a := mat.NewDense(2*d, 2*d, nil)
	// Top half: G[0:d, :].
	a.Copy(g.Slice(0, d, 0, 2*d))
	// Bottom half: C · G[d:2d, :].
	var bottom mat.Dense
	bottom.Mul(mat.NewDense(d, d, c), g.Slice(d, 2*d, 0, 2*d))
	a.Slice(d, 2*d, 0, 2*d).(*mat.Dense).Copy(&bottom)
	for i := 0; i < 2*d; i++ {
		a.Set(i, i, a.At(i, i)+1)
	}
	return a
}

// LogLikelihood returns the mean over baskets of log det L_S − log det(L+I),
// scored in parallel. A basket whose determinant is zero contributes −Inf.
// Baskets are validated (non-empty, in range, no duplicates); the first bad
// basket's index is in the error.
func (m *Model) LogLikelihood(baskets [][]int) (float64, error) {
	if len(baskets) == 0 {
		return 0, fmt.Errorf("ndpp: no baskets to score")
	}
	lds, err := m.LogDets(baskets, 0)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, ld := range lds {
		sum += ld
	}
	norm := m.LogNormalizer()
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0, fmt.Errorf("%w: log det(I + L) = %v (see Model.CheckScale)", ErrOverflow, norm)
	}
	return sum/float64(len(lds)) - norm, nil
}

// LogDets scores many baskets in parallel: out[i] = log det L_{baskets[i]}
// (−Inf when zero). workers ≤ 0 means GOMAXPROCS. The model is shared
// read-only between the workers. An invalid basket, or one whose kernel
// overflows float64 (ErrOverflow), stops the batch with an error naming
// its index.
func (m *Model) LogDets(baskets [][]int, workers int) ([]float64, error) {
	return m.LogDetsEps(baskets, workers, 0)
}

// LogDetsEps is LogDets of log det(L_S + εI) (see LogDetEps).
func (m *Model) LogDetsEps(baskets [][]int, workers int, eps float64) ([]float64, error) {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ndpp: ε = %v; want finite and ≥ 0", eps)
	}
	out := make([]float64, len(baskets))
	for i, s := range baskets {
		if err := m.CheckItems(s); err != nil {
			return nil, fmt.Errorf("basket %d: %w", i, err)
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(baskets)/64))
	var wg sync.WaitGroup
	overflow := make([]int, workers) // per worker: 1 + the first overflowing basket, or 0
	chunk := (len(baskets) + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(baskets))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			var buf []float64
			for i := lo; i < hi; i++ {
				k := len(baskets[i])
				if need := k*k + k; cap(buf) < need {
					buf = make([]float64, need)
				}
				var ok bool
				if out[i], _, ok = m.logDetInto(buf[:k*k+k], baskets[i], eps); !ok {
					overflow[w] = i + 1
					return
				}
			}
		}(w, lo, hi)
	}
	wg.Wait()
	for _, i := range overflow {
		if i > 0 {
			return nil, fmt.Errorf("basket %d: %w", i-1, overflowError(baskets[i-1]))
		}
	}
	return out, nil
}
