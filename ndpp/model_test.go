package ndpp

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Tolerances for comparisons with direct computations.
const (
	logDetTol = 1e-8  // absolute, on log-determinants of well-conditioned sets
	normRel   = 1e-10 // relative, normaliser vs the n×n determinant
)

// directLogDet is the brute-force reference: the k×k kernel built entry by
// entry from V, B, C and the diagonal with gonum's mat, its determinant by
// mat.Det.
func directLogDet(m *Model, items []int) float64 {
	return directLogDetEps(m, items, 0)
}

// directLogDetEps is directLogDet of L_S + εI.
func directLogDetEps(m *Model, items []int, eps float64) float64 {
	V, B, C, D := m.V(), m.B(), m.C(), m.Diag()
	k := len(items)
	L := mat.NewDense(k, k, nil)
	for a, i := range items {
		for b, j := range items {
			var cb mat.VecDense
			cb.MulVec(C, B.ColView(j))
			L.Set(a, b, mat.Dot(V.ColView(i), V.ColView(j))+mat.Dot(B.ColView(i), &cb))
		}
		L.Set(a, a, L.At(a, a)+eps)
		if D != nil {
			L.Set(a, a, L.At(a, a)+D[i])
		}
	}
	return math.Log(mat.Det(L))
}

func TestLogDetMatchesDirect(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		d := 1 + int(seed%7)
		n := 3 * d
		m := Random(n, d, seed, RandomOptions{Shared: seed%3 == 0, BlockDiagonal: seed%5 == 0})
		for k := 1; k <= 2*d; k++ {
			items := make([]int, k)
			for i := range items {
				items[i] = (i*7 + int(seed)) % n
			}
			if m.CheckItems(items) != nil {
				continue
			}
			want := directLogDet(m, items)
			got, sign, err := m.LogDet(items)
			require.NoError(t, err)
			if math.IsNaN(want) || want < -30 {
				continue // the direct value is itself noise
			}
			require.Equal(t, 1.0, sign, "seed %d k %d", seed, k)
			require.InDelta(t, want, got, logDetTol*math.Max(1, math.Abs(want)), "seed %d k %d", seed, k)
		}
	}
}

func TestLogDetZeroBeyondRankAndNearSingular(t *testing.T) {
	m := Random(20, 3, 7, RandomOptions{})
	ld, sign, err := m.LogDet([]int{0, 1, 2, 3, 4, 5, 6}) // 7 > 2d = 6
	require.NoError(t, err)
	require.Equal(t, 0.0, sign)
	require.True(t, math.IsInf(ld, -1))

	// Two items with identical embeddings: L_S has two equal rows.
	v, b, _, c := m.Rows()
	v2 := append([]float64(nil), v...)
	b2 := append([]float64(nil), b...)
	copy(v2[3:6], v2[0:3])
	copy(b2[3:6], b2[0:3])
	m2, err := NewFromRows(20, 3, v2, b2, c)
	require.NoError(t, err)
	ld, sign, err = m2.LogDet([]int{0, 1, 2})
	require.NoError(t, err)
	require.Equal(t, 0.0, sign)
	require.True(t, math.IsInf(ld, -1))
	// Perturbed by 1e-14: still zero. By 1e-3: a real value.
	for _, tc := range []struct {
		eps  float64
		zero bool
	}{{1e-14, true}, {1e-3, false}} {
		v3 := append([]float64(nil), v2...)
		v3[3] += tc.eps
		m3, err := NewFromRows(20, 3, v3, b2, c)
		require.NoError(t, err)
		ld, sign, err = m3.LogDet([]int{0, 1, 2})
		require.NoError(t, err)
		require.Equal(t, tc.zero, sign == 0, "eps %g", tc.eps)
		if !tc.zero {
			require.InDelta(t, directLogDet(m3, []int{0, 1, 2}), ld, 1e-6)
		}
	}
}

func TestLogNormalizerMatchesDense(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		d := 1 + int(seed%6)
		n := 5 + int(seed%17)
		diag := 0.0
		if seed > 20 {
			diag = 0.5
		}
		m := Random(n, d, seed, RandomOptions{Shared: seed%2 == 0, Diag: diag})
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		L, err := m.Kernel(items)
		require.NoError(t, err)
		for i := 0; i < n; i++ {
			L.Set(i, i, L.At(i, i)+1)
		}
		want := math.Log(mat.Det(L))
		got := m.LogNormalizer()
		require.InDelta(t, want, got, normRel*math.Max(1, math.Abs(want)), "seed %d", seed)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	d, n := 3, 4
	ok := func() []float64 { return make([]float64, n*d) }
	skew := []float64{0, 1, 0, -1, 0, 2, 0, -2, 0}
	cases := []struct {
		name    string
		v, b, c []float64
		want    string
	}{
		{"V shape", make([]float64, 5), nil, skew, "V has 5 values"},
		{"B shape", ok(), make([]float64, 3), skew, "B has 3 values"},
		{"C shape", ok(), nil, make([]float64, 4), "C has 4 values"},
		{"NaN", append(ok()[:n*d-1], math.NaN()), nil, skew, "non-finite"},
		{"Inf in C", ok(), nil, []float64{0, math.Inf(1), 0, -1, 0, 2, 0, -2, 0}, "non-finite"},
		{"non-skew", ok(), nil, []float64{0, 1, 0, 1, 0, 2, 0, -2, 0}, "max |C+Cᵀ| = 2"},
		{"diag", ok(), nil, []float64{1, 1, 0, -1, 0, 2, 0, -2, 0}, "not skew-symmetric"},
	}
	for _, tc := range cases {
		_, err := NewFromRows(n, d, tc.v, tc.b, tc.c)
		require.Error(t, err, tc.name)
		require.True(t, strings.Contains(err.Error(), tc.want), "%s: %v", tc.name, err)
		_, err = NewFromOwnedRows(n, d, tc.v, tc.b, tc.c)
		require.ErrorContains(t, err, tc.want, "%s (owned rows)", tc.name)
	}
	_, err := New(mat.NewDense(3, 4, nil), mat.NewDense(2, 4, nil), mat.NewDense(3, 3, nil))
	require.ErrorContains(t, err, "B is 2×4")
	_, err = New(mat.NewDense(3, 4, nil), nil, Skew(mat.NewDense(3, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9})))
	require.NoError(t, err)
}

// NewFromOwnedRows builds the model NewFromRows builds, on the caller's
// arrays instead of copies.
func TestNewFromOwnedRows(t *testing.T) {
	for _, shared := range []bool{false, true} {
		m := Random(9, 3, 5, RandomOptions{Shared: shared})
		v, b, _, c := m.Rows()
		if shared {
			b = nil
		}
		voc, err := NewVocab([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"})
		require.NoError(t, err)
		copied, err := NewFromRows(9, 3, v, b, c, WithVocab(voc))
		require.NoError(t, err)
		v2, c2 := slices.Clone(v), slices.Clone(c)
		b2 := slices.Clone(b)
		owned, err := NewFromOwnedRows(9, 3, v2, b2, c2, WithVocab(voc))
		require.NoError(t, err)
		gv, gb, gbc, gc := owned.Rows()
		wv, wb, wbc, wc := copied.Rows()
		require.Equal(t, [][]float64{wv, wb, wbc, wc}, [][]float64{gv, gb, gbc, gc})
		require.Equal(t, shared, owned.Shared())
		require.Equal(t, voc.Tokens(), owned.Vocab().Tokens())
		require.Same(t, &v2[0], &gv[0], "V was copied")
		require.Same(t, &c2[0], &gc[0], "C was copied")
		if !shared {
			require.Same(t, &b2[0], &gb[0], "B was copied")
		}
	}
}

func TestScoringRejectsBadSets(t *testing.T) {
	m := Random(10, 2, 1, RandomOptions{})
	_, _, err := m.LogDet(nil)
	require.ErrorIs(t, err, ErrEmptySet)
	_, _, err = m.LogDet([]int{1, 10})
	require.ErrorContains(t, err, "item 10 (position 1) out of range")
	_, _, err = m.LogDet([]int{3, 1, 3})
	require.ErrorContains(t, err, "duplicate item 3")
	_, err = m.LogDets([][]int{{1}, {-1}}, 2)
	require.ErrorContains(t, err, "basket 1")
}

func TestLogDetsParallelMatchesSerial(t *testing.T) {
	m := Random(300, 8, 3, RandomOptions{})
	baskets := make([][]int, 1000)
	for i := range baskets {
		k := 1 + i%12
		for j := 0; j < k; j++ {
			baskets[i] = append(baskets[i], (i*31+j*17)%300)
		}
	}
	got, err := m.LogDets(baskets, 4)
	require.NoError(t, err)
	for i, s := range baskets {
		want, _, err := m.LogDet(s)
		require.NoError(t, err)
		require.Equal(t, want, got[i])
	}
	ll, err := m.LogLikelihood(baskets)
	require.NoError(t, err)
	require.False(t, math.IsNaN(ll))
}

// TestBackendsAgree computes the normaliser (a BLAS-3 Gram plus an LU) and
// log-determinants with every compiled-in backend; they must agree to 1e-10
// relative.
func TestBackendsAgree(t *testing.T) {
	prev := blas.Backend()
	defer func() { _ = blas.Use(prev) }()
	type result struct {
		norm float64
		lds  []float64
	}
	var ref *result
	for _, name := range blas.Available() {
		require.NoError(t, blas.Use(name))
		// A fresh model per backend: the normaliser is cached per model.
		m := Random(2000, 40, 11, RandomOptions{})
		r := &result{norm: m.LogNormalizer()}
		for k := 1; k <= 80; k += 9 {
			items := make([]int, k)
			for i := range items {
				items[i] = i * 13
			}
			ld, _, err := m.LogDet(items)
			require.NoError(t, err)
			r.lds = append(r.lds, ld)
		}
		if ref == nil {
			ref = r
			continue
		}
		require.InEpsilon(t, ref.norm, r.norm, 1e-10, "backend %s", name)
		for i := range r.lds {
			require.InEpsilon(t, ref.lds[i], r.lds[i], 1e-10, "backend %s set %d", name, i)
		}
	}
}

func TestDiagonalModelMatchesDirect(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		d := 1 + int(seed%5)
		n := 4*d + 2
		// From δ ≈ 1e-4 (a nearly low-rank kernel) to δ ≈ 1 (nearly diagonal).
		scale := math.Pow(10, -4+float64(seed%5))
		m := Random(n, d, seed, RandomOptions{Shared: seed%3 == 0, Diag: scale})
		require.True(t, m.HasDiag())
		require.Equal(t, n, m.MaxRank())
		for k := 1; k <= n; k++ { // beyond 2d: a diagonal keeps det L_S > 0
			items := make([]int, k)
			for i := range items {
				items[i] = (i*3 + int(seed)) % n
			}
			if m.CheckItems(items) != nil {
				continue
			}
			want := directLogDet(m, items)
			got, sign, err := m.LogDet(items)
			require.NoError(t, err)
			require.Equal(t, 1.0, sign, "seed %d k %d", seed, k)
			require.InDelta(t, want, got, logDetTol*math.Max(1, math.Abs(want)), "seed %d k %d", seed, k)
			for _, eps := range []float64{1e-5, 0.3} {
				want := directLogDetEps(m, items, eps)
				got, sign, err := m.LogDetEps(items, eps)
				require.NoError(t, err)
				require.Equal(t, 1.0, sign)
				require.InDelta(t, want, got, logDetTol*math.Max(1, math.Abs(want)), "seed %d k %d eps %g", seed, k, eps)
			}
		}
	}
}

func TestLogDetEpsKeepsLargeSetsFinite(t *testing.T) {
	// Without a diagonal a set larger than 2d has det L_S = 0, but
	// det(L_S + εI) > 0: the ε convention of the learners and evaluation.
	m := Random(30, 2, 3, RandomOptions{})
	items := []int{0, 1, 2, 3, 4, 5, 6}
	ld, sign, err := m.LogDet(items)
	require.NoError(t, err)
	require.Zero(t, sign)
	require.True(t, math.IsInf(ld, -1))
	for _, eps := range []float64{1e-5, 1e-2} {
		ld, sign, err = m.LogDetEps(items, eps)
		require.NoError(t, err)
		require.Equal(t, 1.0, sign)
		want := directLogDetEps(m, items, eps)
		require.InDelta(t, want, ld, 1e-6*math.Abs(want))
		// Three eigenvalues of L_S + εI are ε: the value is about 3 log ε.
		require.Less(t, ld, 2*math.Log(eps))
	}
	lds, err := m.LogDetsEps([][]int{items, {0}}, 1, 1e-5)
	require.NoError(t, err)
	want, _, _ := m.LogDetEps(items, 1e-5)
	require.Equal(t, want, lds[0])
	for _, eps := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, _, err = m.LogDetEps(items, eps)
		require.ErrorContains(t, err, "ε")
		_, err = m.LogDetsEps([][]int{items}, 1, eps)
		require.ErrorContains(t, err, "ε")
	}
}

func TestWithDiagValidates(t *testing.T) {
	n, d := 4, 2
	v := make([]float64, n*d)
	c := make([]float64, d*d)
	for _, tc := range []struct {
		delta []float64
		msg   string
	}{
		{[]float64{1, 2, 3}, "diagonal of 3 entries for 4 items"},
		{[]float64{1, -1e-300, 3, 4}, "diagonal entry 1"},
		{[]float64{1, 2, math.NaN(), 4}, "diagonal entry 2"},
		{[]float64{1, 2, 3, math.Inf(1)}, "diagonal entry 3"},
	} {
		_, err := NewFromRows(n, d, v, nil, c, WithDiag(tc.delta))
		require.ErrorContains(t, err, tc.msg)
	}
	// All zeros and nil mean no diagonal: the model is the low-rank one.
	for _, delta := range [][]float64{nil, make([]float64, n)} {
		m, err := NewFromRows(n, d, v, nil, c, WithDiag(delta))
		require.NoError(t, err)
		require.False(t, m.HasDiag())
		require.Nil(t, m.Diag())
		require.Equal(t, min(n, d), m.MaxRank()) // shared (B = V): rank ≤ d
	}
	// B = V: L = Vᵀ(I + C)V has rank ≤ d.
	sh := Random(10, 3, 2, RandomOptions{Shared: true})
	require.Equal(t, 3, sh.MaxRank())
	ld, sign, err := sh.LogDet([]int{0, 1, 2, 3})
	require.NoError(t, err)
	require.Zero(t, sign)
	require.True(t, math.IsInf(ld, -1))
	dense, err := sh.Kernel([]int{0, 1, 2, 3})
	require.NoError(t, err)
	require.Less(t, math.Abs(mat.Det(dense)), 1e-12) // the dense determinant is rounding noise
	delta := []float64{0, 1, 2, 3}
	m, err := NewFromRows(n, d, v, nil, c, WithDiag(delta))
	require.NoError(t, err)
	delta[1] = 7 // the model keeps its own copy
	require.Equal(t, []float64{0, 1, 2, 3}, m.Diag())
	require.Equal(t, 2.0, m.ItemDiag(2))
	require.Equal(t, 3.0, m.Entry(3, 3))
}

// TestRowTimesC: RowTimesC equals the plain sum over l in order, skipping
// zero entries of b, bit for bit (zeros in b and C included), so that
// vectors computed from streamed items equal the model's rows.
func TestRowTimesC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		d := 1 + rng.IntN(13)
		b, c := make([]float64, d), make([]float64, d*d)
		for i := range b {
			if rng.IntN(4) > 0 {
				b[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10))
			}
		}
		for i := range c {
			if rng.IntN(5) > 0 {
				c[i] = rng.NormFloat64()
			}
		}
		want := make([]float64, d)
		for l, bl := range b {
			if bl == 0 {
				continue
			}
			for k := range want {
				want[k] += bl * c[l*d+k]
			}
		}
		got := make([]float64, d)
		RowTimesC(got, b, c)
		for k := range got {
			if math.Float64bits(got[k]) != math.Float64bits(want[k]) {
				t.Fatalf("d = %d, entry %d: %v, want %v", d, k, got[k], want[k])
			}
		}
	}
}
