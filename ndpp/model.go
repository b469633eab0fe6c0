package ndpp

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/blas"
)

// Model is a low-rank nonsymmetric DPP kernel L = VᵀV + BᵀCB over n items with
// rank parameter d, optionally plus a nonnegative diagonal D (WithDiag). V
// and B are d×n (item i is column i), C is d×d and skew-symmetric.
//
// A Model is immutable once built and safe for concurrent use by many
// goroutines. Internally each item's vectors are stored contiguously (the
// n×d row layout of embedding tables), together with bᵢᵀC so that a kernel
// entry costs two dot products of length d:
//
//	L_ij = vᵢ·vⱼ + (bᵢᵀC)·bⱼ.
type Model struct {
	n, d   int
	v      []float64 // n×d, row i = vᵢ
	b      []float64 // n×d, row i = bᵢ (aliases v when shared)
	bc     []float64 // n×d, row i = bᵢᵀC
	c      []float64 // d×d row-major
	shared bool
	diag   []float64 // δᵢ ≥ 0 of L = D + VᵀV + BᵀCB, or nil (D = 0)
	ids    []int64
	idRow  map[int64]int // id → row, with ids
	vocab  *Vocab

	normOnce sync.Once
	logNorm  float64
}

// Option configures a Model at construction.
type Option func(*Model) error

// WithIDs attaches external integer item ids (one per item, distinct). They
// are saved with the model and used to map basket files to rows.
func WithIDs(ids []int64) Option {
	return func(m *Model) error {
		if len(ids) != m.n {
			return fmt.Errorf("ndpp: %d ids for %d items", len(ids), m.n)
		}
		seen := make(map[int64]int, len(ids))
		for i, id := range ids {
			if j, ok := seen[id]; ok {
				return fmt.Errorf("ndpp: duplicate id %d at rows %d and %d", id, j, i)
			}
			seen[id] = i
		}
		m.ids = append([]int64(nil), ids...)
		m.idRow = seen
		return nil
	}
}

// WithVocab attaches a vocabulary mapping item tokens to rows. Its size must
// equal the number of items.
func WithVocab(v *Vocab) Option {
	return func(m *Model) error {
		if v == nil {
			return nil
		}
		if v.Len() != m.n {
			return fmt.Errorf("ndpp: vocabulary of %d tokens for %d items", v.Len(), m.n)
		}
		m.vocab = v.Clone()
		return nil
	}
}

// WithDiag adds a nonnegative diagonal D = diag(δ) to the kernel:
// L = D + VᵀV + BᵀCB. A rank-2d kernel gives probability zero to any set of
// more than 2d items and ties each item's inclusion rate to its
// embeddings; D frees both (with V = B = 0 it is the independent-items
// model, P(i ∈ Y) = δᵢ/(1 + δᵢ)). The slice is copied; nil or all zeros
// means no diagonal.
func WithDiag(delta []float64) Option {
	return func(m *Model) error {
		if delta == nil {
			return nil
		}
		if len(delta) != m.n {
			return fmt.Errorf("ndpp: diagonal of %d entries for %d items", len(delta), m.n)
		}
		any := false
		for i, x := range delta {
			if !(x >= 0) || math.IsInf(x, 0) {
				return fmt.Errorf("ndpp: diagonal entry %d is %v; want finite and ≥ 0", i, x)
			}
			any = any || x != 0
		}
		if any {
			m.diag = append([]float64(nil), delta...)
		}
		return nil
	}
}

// SkewTol is the largest |C + Cᵀ| entry, relative to max(1, max|C|),
// accepted as skew-symmetric.
const SkewTol = 1e-12

// New builds a model from V and B (d×n, items are columns) and C (d×d,
// skew-symmetric). B may be nil for the B = V variant used in Gartrell et
// al.'s experiments. The matrices are copied. New returns an error for
// mismatched shapes, empty dimensions, non-finite values and a C that is not
// skew-symmetric (use Skew to project a matrix D to D − Dᵀ).
func New(V, B, C mat.Matrix, opts ...Option) (*Model, error) {
	if V == nil || C == nil {
		return nil, errors.New("ndpp: V and C are required")
	}
	d, n := V.Dims()
	if d == 0 || n == 0 {
		return nil, fmt.Errorf("ndpp: V is %d×%d; need d ≥ 1 and n ≥ 1", d, n)
	}
	v := make([]float64, n*d)
	for i := 0; i < n; i++ {
		for k := 0; k < d; k++ {
			v[i*d+k] = V.At(k, i)
		}
	}
	var b []float64
	if B != nil {
		bd, bn := B.Dims()
		if bd != d || bn != n {
			return nil, fmt.Errorf("ndpp: B is %d×%d, V is %d×%d; want equal shapes", bd, bn, d, n)
		}
		b = make([]float64, n*d)
		for i := 0; i < n; i++ {
			for k := 0; k < d; k++ {
				b[i*d+k] = B.At(k, i)
			}
		}
	}
	cr, cc := C.Dims()
	if cr != d || cc != d {
		return nil, fmt.Errorf("ndpp: C is %d×%d; want %d×%d (d from V)", cr, cc, d, d)
	}
	c := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			c[i*d+j] = C.At(i, j)
		}
	}
	return build(n, d, v, b, c, opts)
}

// NewFromRows builds a model from row-major n×d arrays (row i holds item i's
// vector, the layout of embedding tables and of model files) and a row-major
// d×d C. bRows may be nil for B = V. The slices are copied.
func NewFromRows(n, d int, vRows, bRows, c []float64, opts ...Option) (*Model, error) {
	if err := checkRowShapes(n, d, vRows, bRows, c); err != nil {
		return nil, err
	}
	v := append([]float64(nil), vRows...)
	var b []float64
	if bRows != nil {
		b = append([]float64(nil), bRows...)
	}
	return build(n, d, v, b, append([]float64(nil), c...), opts)
}

func checkRowShapes(n, d int, vRows, bRows, c []float64) error {
	if n <= 0 || d <= 0 {
		return fmt.Errorf("ndpp: n = %d, d = %d; both must be positive", n, d)
	}
	if len(vRows) != n*d {
		return fmt.Errorf("ndpp: V has %d values; want n×d = %d×%d = %d", len(vRows), n, d, n*d)
	}
	if bRows != nil && len(bRows) != n*d {
		return fmt.Errorf("ndpp: B has %d values; want n×d = %d×%d = %d", len(bRows), n, d, n*d)
	}
	if len(c) != d*d {
		return fmt.Errorf("ndpp: C has %d values; want d×d = %d", len(c), d*d)
	}
	return nil
}

// NewFromOwnedRows is NewFromRows without the copies: the model takes
// ownership of vRows, bRows and c, and the caller must neither modify nor
// keep them after the call (the model's immutability rests on it). It is
// for readers of model files (package npz), which decode into fresh
// arrays, so that a large model is not held twice while it is built.
func NewFromOwnedRows(n, d int, vRows, bRows, c []float64, opts ...Option) (*Model, error) {
	if err := checkRowShapes(n, d, vRows, bRows, c); err != nil {
		return nil, err
	}
	return build(n, d, vRows, bRows, c, opts)
}

// build takes ownership of v, b and c, validates and precomputes.
func build(n, d int, v, b, c []float64, opts []Option) (*Model, error) {
	if err := checkFinite("V", v, d); err != nil {
		return nil, err
	}
	shared := b == nil
	if shared {
		b = v
	} else if err := checkFinite("B", b, d); err != nil {
		return nil, err
	}
	if err := checkFinite("C", c, d); err != nil {
		return nil, err
	}
	if dev, i, j := SkewDeviation(c, d); dev > SkewTol*math.Max(1, maxAbs(c)) {
		return nil, fmt.Errorf("ndpp: C is not skew-symmetric: max |C+Cᵀ| = %.3g at (%d,%d) (use ndpp.Skew to project D to D−Dᵀ)", dev, i, j)
	}
	m := &Model{n: n, d: d, v: v, b: b, c: c, shared: shared}
	m.bc = make([]float64, n*d)
	for i := 0; i < n; i++ {
		RowTimesC(m.bc[i*d:(i+1)*d], b[i*d:(i+1)*d], c)
	}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// RowTimesC writes bᵀC into dst (len d) for a row b (len d) and a row-major
// d×d C, in the order the model uses for its rows bᵢᵀC (Rows, ItemBC), so
// that a vector computed from the same b and C has the same bits. It
// panics if the lengths disagree.
func RowTimesC(dst, b, c []float64) {
	d := len(b)
	if len(dst) != d || len(c) != d*d {
		panic(fmt.Sprintf("ndpp: RowTimesC with len(dst) = %d, len(b) = %d, len(C) = %d", len(dst), d, len(c)))
	}
	for k := range dst {
		dst[k] = 0
	}
	// (bᵀC)_k = Σ_l b_l C_lk, summed in the order of l, four rows of C at a
	// time. A term with b_l = 0 is ±0 and leaves every partial sum as it is
	// (the sums start at +0 and are never −0 in round-to-nearest), so the
	// bits do not depend on the grouping.
	l := 0
	for ; l+4 <= d; l += 4 {
		b0, b1, b2, b3 := b[l], b[l+1], b[l+2], b[l+3]
		r0, r1, r2, r3 := c[l*d:(l+1)*d], c[(l+1)*d:(l+2)*d], c[(l+2)*d:(l+3)*d], c[(l+3)*d:(l+4)*d]
		r0, r1, r2, r3 = r0[:len(dst)], r1[:len(dst)], r2[:len(dst)], r3[:len(dst)]
		for k, o := range dst {
			o += b0 * r0[k]
			o += b1 * r1[k]
			o += b2 * r2[k]
			o += b3 * r3[k]
			dst[k] = o
		}
	}
	for ; l < d; l++ {
		bl := b[l]
		row := c[l*d : (l+1)*d]
		for k, ck := range row {
			dst[k] += bl * ck
		}
	}
}

// MaxKernelScale bounds the scale of a kernel that evaluates without
// overflow: CheckScale reports a model whose
//
//	s = (Σᵢ ‖zᵢ‖² + maxᵢ δᵢ)·(1 + d·max|C_kl|),  zᵢ = [vᵢ; bᵢ],
//
// exceeds it. s bounds the magnitude of every kernel entry L_ij and of every
// entry of the normaliser's 2d×2d matrix I + W·G, so that sums and products
// of two of them, as the determinants and conditional gains form, stay
// finite in float64 (whose largest value is about 1.8e308).
const MaxKernelScale = 1e150

// ErrOverflow is wrapped by the errors of computations whose values
// overflow float64 for a model's kernel (see CheckScale).
var ErrOverflow = errors.New("ndpp: the kernel's values overflow float64")

// CheckScale returns an error wrapping ErrOverflow when the model's kernel
// is beyond MaxKernelScale, naming the largest item vector. Such a model has
// finite parameters but its determinants, normaliser and conditional gains
// may overflow: LogDet and LogLikelihood then return errors, LogNormalizer
// a non-finite value. Parameters that large come from diverged training or
// rescaled files, not from data; the ndpp-bench commands refuse such models
// when they load them.
func (m *Model) CheckScale() error {
	d := m.d
	sum, big, bigRow := 0.0, 0.0, 0
	for i := 0; i < m.n; i++ {
		z := 0.0
		for _, x := range m.v[i*d : (i+1)*d] {
			z += x * x
		}
		if !m.shared {
			for _, x := range m.b[i*d : (i+1)*d] {
				z += x * x
			}
		}
		if !(z <= big) {
			big, bigRow = z, i
		}
		sum += z
	}
	maxDiag := 0.0
	for _, x := range m.diag {
		maxDiag = math.Max(maxDiag, x)
	}
	s := (sum + maxDiag) * (1 + float64(d)*maxAbs(m.c))
	if s <= MaxKernelScale {
		return nil
	}
	return fmt.Errorf("%w: the kernel's scale (Σᵢ‖zᵢ‖² + max δᵢ)·(1 + d·max|C|) = %.3g exceeds %g (largest item: row %d, ‖zᵢ‖² = %.3g; max δᵢ = %.3g, max |C| = %.3g); such parameters come from diverged training or a rescaled file",
		ErrOverflow, s, MaxKernelScale, bigRow, big, maxDiag, maxAbs(m.c))
}

func checkFinite(name string, x []float64, d int) error {
	for i, f := range x {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("ndpp: %s has a non-finite value %v at row %d, column %d", name, f, i/d, i%d)
		}
	}
	return nil
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, f := range x {
		m = math.Max(m, math.Abs(f))
	}
	return m
}

// SkewDeviation returns max |C_ij + C_ji| over a row-major d×d matrix and
// where it occurs.
func SkewDeviation(c []float64, d int) (dev float64, i, j int) {
	for r := 0; r < d; r++ {
		for s := r; s < d; s++ {
			if e := math.Abs(c[r*d+s] + c[s*d+r]); e > dev {
				dev, i, j = e, r, s
			}
		}
	}
	return dev, i, j
}

// Skew returns D − Dᵀ, a skew-symmetric matrix, for a square D.
func Skew(D mat.Matrix) *mat.Dense {
	r, c := D.Dims()
	if r != c {
		panic("ndpp: Skew of a non-square matrix")
	}
	out := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			out.Set(i, j, D.At(i, j)-D.At(j, i))
		}
	}
	return out
}

// N returns the number of items.
func (m *Model) N() int { return m.n }

// D returns the rank parameter d (V, B are d×n).
func (m *Model) D() int { return m.d }

// Shared reports whether B = V.
func (m *Model) Shared() bool { return m.shared }

// IDs returns a copy of the external item ids, or nil.
func (m *Model) IDs() []int64 {
	if m.ids == nil {
		return nil
	}
	return append([]int64(nil), m.ids...)
}

// Diag returns a copy of the diagonal δ of L = D + VᵀV + BᵀCB, or nil when
// the model has none.
func (m *Model) Diag() []float64 {
	if m.diag == nil {
		return nil
	}
	return append([]float64(nil), m.diag...)
}

// HasDiag reports whether the model has a diagonal term.
func (m *Model) HasDiag() bool { return m.diag != nil }

// ItemDiag returns δᵢ (0 without a diagonal). It panics, naming the item,
// when i is not in [0, N()).
func (m *Model) ItemDiag(i int) float64 {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"ItemDiag", i, m.n})
	}
	if m.diag == nil {
		return 0
	}
	return m.diag[i]
}

// MaxRank returns the largest size of a set that can have det L_S > 0: the
// rank bound of the low-rank kernel, 2d (d when B = V, as then
// L = Vᵀ(I + C)V), or n with a diagonal.
func (m *Model) MaxRank() int {
	switch {
	case m.diag != nil:
		return m.n
	case m.shared:
		return min(m.n, m.d)
	}
	return min(m.n, 2*m.d)
}

// Vocab returns the model's vocabulary, or nil. The returned value must not
// be modified.
func (m *Model) Vocab() *Vocab { return m.vocab }

// V returns a copy of V (d×n).
func (m *Model) V() *mat.Dense { return colsDense(m.v, m.n, m.d) }

// B returns a copy of B (d×n); equal to V for a shared model.
func (m *Model) B() *mat.Dense { return colsDense(m.b, m.n, m.d) }

// C returns a copy of C (d×d).
func (m *Model) C() *mat.Dense { return mat.NewDense(m.d, m.d, append([]float64(nil), m.c...)) }

func colsDense(rows []float64, n, d int) *mat.Dense {
	out := mat.NewDense(d, n, nil)
	for i := 0; i < n; i++ {
		for k := 0; k < d; k++ {
			out.Set(k, i, rows[i*d+k])
		}
	}
	return out
}

// Rows returns the model's internal row-major n×d arrays: vRows (row i = vᵢ),
// bRows (row i = bᵢ; the same slice as vRows for a shared model), bcRows
// (row i = bᵢᵀC) and the row-major d×d C. They are for read-only use in hot
// loops (detcache, learners); modifying them breaks the model.
func (m *Model) Rows() (vRows, bRows, bcRows, c []float64) { return m.v, m.b, m.bc, m.c }

// ItemV returns vᵢ (read-only view). It panics, naming the item, when i is
// not in [0, N()).
func (m *Model) ItemV(i int) []float64 {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"ItemV", i, m.n})
	}
	return m.v[i*m.d : (i+1)*m.d : (i+1)*m.d]
}

// ItemB returns bᵢ (read-only view). It panics, naming the item, when i is
// not in [0, N()).
func (m *Model) ItemB(i int) []float64 {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"ItemB", i, m.n})
	}
	return m.b[i*m.d : (i+1)*m.d : (i+1)*m.d]
}

// ItemBC returns bᵢᵀC (read-only view). It panics, naming the item, when i
// is not in [0, N()).
func (m *Model) ItemBC(i int) []float64 {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"ItemBC", i, m.n})
	}
	return m.bc[i*m.d : (i+1)*m.d : (i+1)*m.d]
}

// itemRangeError is the panic value of an item index out of range in a
// Model accessor: a programmer error (CheckItems validates indices from
// data). It is a value, not a formatted string, so that the accessors stay
// cheap enough to be inlined.
type itemRangeError struct {
	fn   string
	i, n int
}

func (e itemRangeError) Error() string {
	return fmt.Sprintf("ndpp: Model.%s: item %d out of range [0, %d)", e.fn, e.i, e.n)
}

// Entry returns L_ij = [i = j]δᵢ + vᵢ·vⱼ + bᵢᵀCbⱼ. It panics, naming the
// index, when i or j is not in [0, N()).
func (m *Model) Entry(i, j int) float64 {
	if uint(i) >= uint(m.n) || uint(j) >= uint(m.n) {
		panic(fmt.Sprintf("ndpp: Model.Entry(%d, %d): index out of range [0, %d)", i, j, m.n))
	}
	e := blas.Dot(m.ItemV(i), m.ItemV(j)) + blas.Dot(m.ItemBC(i), m.ItemB(j))
	if i == j && m.diag != nil {
		e += m.diag[i]
	}
	return e
}

// CheckItems validates a set of item indices: non-empty, in range, no
// duplicates. Errors name the offending item.
func (m *Model) CheckItems(items []int) error {
	if len(items) == 0 {
		return ErrEmptySet
	}
	for p, it := range items {
		if it < 0 || it >= m.n {
			return fmt.Errorf("ndpp: item %d (position %d) out of range [0, %d)", it, p, m.n)
		}
	}
	if len(items) <= 32 {
		for a := 1; a < len(items); a++ {
			for b := 0; b < a; b++ {
				if items[a] == items[b] {
					return fmt.Errorf("ndpp: duplicate item %d at positions %d and %d", items[a], b, a)
				}
			}
		}
		return nil
	}
	seen := make(map[int]int, len(items))
	for p, it := range items {
		if q, ok := seen[it]; ok {
			return fmt.Errorf("ndpp: duplicate item %d at positions %d and %d", it, q, p)
		}
		seen[it] = p
	}
	return nil
}

// ErrEmptySet is returned when an operation needs a non-empty set of items.
var ErrEmptySet = errors.New("ndpp: empty item set")

// KernelInto writes L_S into dst (len(items)×len(items), row-major). It
// does not look for duplicate items (Kernel validates the set); a dst
// shorter than len(items)² or an item not in [0, N()) is a programmer
// error and panics with a message naming it.
func (m *Model) KernelInto(dst []float64, items []int) {
	k := len(items)
	if len(dst) < k*k {
		panic(fmt.Sprintf("ndpp: Model.KernelInto: dst has length %d; want at least %d×%d = %d", len(dst), k, k, k*k))
	}
	for p, i := range items {
		if uint(i) >= uint(m.n) {
			panic(fmt.Sprintf("ndpp: Model.KernelInto: item %d (position %d) out of range [0, %d)", i, p, m.n))
		}
	}
	for a, i := range items {
		vi, bci := m.ItemV(i), m.ItemBC(i)
		row := dst[a*k : (a+1)*k]
		for b, j := range items {
			row[b] = blas.Dot(vi, m.ItemV(j)) + blas.Dot(bci, m.ItemB(j))
		}
		if m.diag != nil {
			row[a] += m.diag[i]
		}
	}
}

// Kernel returns the submatrix L_S for the given items (validated).
func (m *Model) Kernel(items []int) (*mat.Dense, error) {
	if err := m.CheckItems(items); err != nil {
		return nil, err
	}
	k := len(items)
	data := make([]float64, k*k)
	m.KernelInto(data, items)
	return mat.NewDense(k, k, data), nil
}
