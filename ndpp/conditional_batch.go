package ndpp

import (
	"fmt"
	"math"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/f64"
)

// Block sizes of ConditionalGainsBatch: the sets of a batch are taken in
// groups of at most gainsRows stacked items (a larger set is a group of its
// own), and the catalogue in blocks of gainsCols items, so that each pair
// of products is a gainsRows×d by d×gainsCols GEMM whose outputs stay in
// cache while they are consumed.
const (
	gainsRows = 256
	gainsCols = 512
	// gainsGemmMinK: from this set size on, L_Y⁻¹U is one GEMM; below,
	// |Y|² vector updates.
	gainsGemmMinK = 4
)

// ConditionalGainsBatch is ConditionalGains for many sets at once: it
// writes into dst[b] (length ≥ N()) the conditional gain of every item j
// given ys[b],
//
//	s_j = det L_{Y+j} / det L_Y = L_jj − L_{j,Y} L_Y⁻¹ L_{Y,j},
//
// with s_j = 0 for j ∈ Y, and into errs[b] the outcome for that set: nil,
// ErrSingularCondition (det L_Y is zero under the numerical zero rule; dst[b]
// is then left unspecified), an error wrapping ErrOverflow (a gain or L_Y
// overflows float64, see Model.CheckScale), or the validation error of an
// invalid set. The
// empty set gives s_j = L_jj.
//
// The items of all sets are stacked and multiplied with the item matrices
// in a few large products (groups of up to 256 stacked items against blocks
// of 512 items), instead of two thin products per set; L_Y⁻¹ is applied
// per set. The arithmetic is that of ConditionalGains, O(n·|Y|·(d + |Y|))
// per set, with L_Y⁻¹ formed explicitly, so the gains agree with it to
// rounding. It returns an error only when the lengths of dst or errs do not
// fit ys.
func (m *Model) ConditionalGainsBatch(ys [][]int, dst [][]float64, errs []error) error {
	if len(dst) != len(ys) || len(errs) != len(ys) {
		return fmt.Errorf("ndpp: ConditionalGainsBatch: %d sets, %d outputs and %d error slots; want equal counts", len(ys), len(dst), len(errs))
	}
	n, d := m.n, m.d
	for b := range dst {
		if len(dst[b]) < n {
			return fmt.Errorf("ndpp: ConditionalGainsBatch needs outputs of length %d, got %d for set %d", n, len(dst[b]), b)
		}
	}
	ljj := make([]float64, n) // L_jj = δⱼ + vⱼ·vⱼ (bⱼᵀCbⱼ = 0)
	for j := range ljj {
		ljj[j] = blas.Dot(m.ItemV(j), m.ItemV(j)) + m.ItemDiag(j)
	}

	// Validate every set and invert its kernel.
	type set struct{ b, k, off int } // off: L_Y⁻¹ in inv[off : off+k²]
	var sets []set
	var inv, work []float64
	var piv []int
	for b, y := range ys {
		errs[b] = nil
		if len(y) == 0 {
			copy(dst[b][:n], ljj)
			continue
		}
		if err := m.CheckItems(y); err != nil {
			errs[b] = err
			continue
		}
		if _, sign, err := m.LogDet(y); err != nil || sign == 0 {
			errs[b] = err
			if err == nil {
				errs[b] = ErrSingularCondition
			}
			continue
		}
		k, off := len(y), len(inv)
		inv = append(inv, make([]float64, k*k)...)
		a := inv[off : off+k*k]
		m.KernelInto(a, y)
		if len(piv) < k {
			piv = make([]int, k)
		}
		if w := f64.InverseWork(k); len(work) < w {
			work = make([]float64, w)
		}
		if _, sign := f64.Inverse(a, k, k, piv, work); sign == 0 {
			errs[b] = ErrSingularCondition
			inv = inv[:off]
			continue
		}
		sets = append(sets, set{b, k, off})
	}
	if len(sets) == 0 {
		return nil
	}

	maxK := 0
	for _, s := range sets {
		maxK = max(maxK, s.k)
	}
	rows := max(gainsRows, maxK)
	cols := min(gainsCols, n)
	vy := make([]float64, rows*d)  // stacked vᵢ, i ∈ Y, for the sets of a group
	bcy := make([]float64, rows*d) // stacked bᵢᵀC
	ua := make([]float64, rows*cols)
	wc := make([]float64, rows*cols)
	p := make([]float64, maxK*cols) // L_Y⁻¹U (one row of it below gainsGemmMinK)
	for g0 := 0; g0 < len(sets); {
		g1, kk := g0, 0
		for g1 < len(sets) && (g1 == g0 || kk+sets[g1].k <= rows) {
			for _, i := range ys[sets[g1].b] {
				copy(vy[kk*d:(kk+1)*d], m.ItemV(i))
				copy(bcy[kk*d:(kk+1)*d], m.ItemBC(i))
				kk++
			}
			g1++
		}
		for j0 := 0; j0 < n; j0 += cols {
			w := min(cols, n-j0)
			// ua[r, j] = v_{y_r}·v_j, wc[r, j] = b_{y_r}ᵀC b_j.
			blas.Gemm(gblas.NoTrans, gblas.Trans, kk, w, d, 1, vy, d, m.v[j0*d:], d, 0, ua, w)
			blas.Gemm(gblas.NoTrans, gblas.Trans, kk, w, d, 1, bcy, d, m.b[j0*d:], d, 0, wc, w)
			// u_j = L_{Y,j} = ua + wc, w_j = L_{j,Y} = ua − wc (Cᵀ = −C).
			for i, a := range ua[:kk*w] {
				c := wc[i]
				ua[i], wc[i] = a+c, a-c
			}
			r := 0
			for _, s := range sets[g0:g1] {
				k, mi := s.k, inv[s.off:s.off+s.k*s.k]
				out := dst[s.b][j0 : j0+w]
				copy(out, ljj[j0:j0+w])
				if k >= gainsGemmMinK { // P = L_Y⁻¹U, k×w
					blas.Gemm(gblas.NoTrans, gblas.NoTrans, k, w, k, 1, mi, k, ua[r*w:], w, 0, p, w)
				}
				for a := 0; a < k; a++ {
					// p = (L_Y⁻¹U)_a, then s_j −= w_a(j)·p_j.
					var pr []float64
					if k >= gainsGemmMinK {
						pr = p[a*w : (a+1)*w]
					} else {
						pr = p[:w]
						clear(pr)
						for c := 0; c < k; c++ {
							f64.AxpyUnitary(mi[a*k+c], ua[(r+c)*w:(r+c+1)*w], pr)
						}
					}
					wr := wc[(r+a)*w : (r+a+1)*w]
					for j, x := range pr {
						out[j] -= wr[j] * x
					}
				}
				r += k
			}
		}
		for _, s := range sets[g0:g1] {
			out := dst[s.b][:n]
			for _, i := range ys[s.b] {
				out[i] = 0
			}
			for j, x := range out {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					errs[s.b] = fmt.Errorf("%w: the conditional gain of item %d is %v", ErrOverflow, j, x)
					break
				}
			}
		}
		g0 = g1
	}
	return nil
}
