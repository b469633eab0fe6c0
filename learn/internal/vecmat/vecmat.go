// Package vecmat multiplies row vectors by small dense matrices for the
// learners: four vectors per pass over the matrix (f64.GemvT4), a single
// one by f64.GemvT. Which kernel computes a row is fixed by the shapes, so
// results do not depend on scheduling.
package vecmat

import "github.com/ndpp-go/ndpp/internal/f64"

// vecmatPadRows and vecmatPadCols bound the sizes for which N pads
// two or three vectors to a group of four (on the stack).
const (
	vecmatPadRows = 32
	vecmatPadCols = 32
)

// N sets out[v·ldo+j] = alpha·Σ_{l<rows} x[v·ldx+l]·m[l·ld+j] for
// v < nv, j < cols: nv row vectors, each of length rows and stored ldx
// apart in x, times the rows×cols row-major matrix m of row stride ld,
// into nv output rows stored ldo apart in out. The out rows are
// overwritten; no other entry of out is touched.
//
// The vectors go four at a time through f64.GemvT4, which reads m once per
// group of four instead of once per vector. Three vectors left over after
// at least one group go through one more group that overlaps the previous
// one (cheaper than three single passes: the overlapped vector is
// recomputed bit for bit); one or two left over go through vecmatLD
// (f64.GemvT) one by one; nv = 2 or 3 (at most
// vecmatPadRows×vecmatPadCols) is padded to four with zero vectors. The
// four-vector kernel sums each entry in row order, the one-vector kernel
// even and odd rows apart, so the two differ by rounding.
//
// out must not overlap x or m. Shapes are the caller's responsibility: negative sizes, strides below
// the row lengths, or slices too short panic.
func N(out []float64, ldo int, x []float64, ldx, nv int, m []float64, rows, cols, ld int, alpha float64) {
	switch {
	case nv < 0 || rows < 0 || cols < 0:
		panic("vecmat: N: negative size")
	case ld < cols:
		panic("vecmat: N: ld below cols")
	case nv > 1 && (ldo < cols || ldx < rows):
		panic("vecmat: N: ldo below cols or ldx below rows")
	}
	if nv == 0 {
		return
	}
	if len(out) < (nv-1)*ldo+cols {
		panic("vecmat: N: out too short")
	}
	if len(x) < (nv-1)*ldx+rows {
		panic("vecmat: N: x too short")
	}
	if rows == 0 || cols == 0 {
		for v := range nv {
			clear(out[v*ldo : v*ldo+cols])
		}
		return
	}
	if len(m) < (rows-1)*ld+cols {
		panic("vecmat: N: m too short")
	}
	v := 0
	if nv >= 2 && nv < 4 && rows <= vecmatPadRows && cols <= vecmatPadCols {
		// Two or three vectors: one pass of the four-vector kernel over
		// copies padded with zero vectors (at 30×30 about twice as fast as
		// single passes).
		var xs [4 * vecmatPadRows]float64
		var os [4 * vecmatPadCols]float64
		for w := range nv {
			copy(xs[w*rows:(w+1)*rows], x[w*ldx:w*ldx+rows])
		}
		f64.GemvT4(rows, cols, m, ld, xs[:], rows, 1, os[:], cols)
		for w := range nv {
			copy(out[w*ldo:w*ldo+cols], os[w*cols:(w+1)*cols])
		}
		scaleRows(out, ldo, nv, cols, alpha)
		return
	}
	for ; v+4 <= nv; v += 4 {
		f64.GemvT4(rows, cols, m, ld, x[v*ldx:], ldx, 1, out[v*ldo:], ldo)
	}
	if nv-v == 3 && nv > 4 {
		// One more group of four ending at the last vector costs less than
		// three single passes; it recomputes vector v−1 with the same
		// operations in the same order, so its row is rewritten with the
		// same bits.
		w := nv - 4
		f64.GemvT4(rows, cols, m, ld, x[w*ldx:], ldx, 1, out[w*ldo:], ldo)
		v = nv
	}
	scaleRows(out, ldo, v, cols, alpha)
	for ; v < nv; v++ {
		LD(out[v*ldo:v*ldo+cols], m, rows, cols, ld, x[v*ldx:v*ldx+rows], alpha)
	}
}

// Room is N for callers whose out and x have room for four
// vectors (len(out) ≥ 3·ldo+cols, len(x) ≥ 3·ldx+rows): two or three
// vectors of sizes N would pad go through one pass of the
// four-vector kernel without N's padded copies (about 70 ns less at
// d = 30), and out's rows past the nv-th, up to the fourth, are
// overwritten with values of no meaning. The nv rows wanted are the bits
// N gives.
func Room(out []float64, ldo int, x []float64, ldx, nv int, m []float64, rows, cols, ld int, alpha float64) {
	if nv < 2 || nv >= 4 || rows <= 0 || cols <= 0 || rows > vecmatPadRows || cols > vecmatPadCols {
		N(out, ldo, x, ldx, nv, m, rows, cols, ld, alpha)
		return
	}
	switch {
	case ld < cols || ldo < cols || ldx < rows:
		panic("vecmat: Room: stride below the row length")
	case len(out) < 3*ldo+cols || len(x) < 3*ldx+rows:
		panic("vecmat: Room: no room for four vectors")
	case len(m) < (rows-1)*ld+cols:
		panic("vecmat: Room: m too short")
	}
	f64.GemvT4(rows, cols, m, ld, x, ldx, 1, out, ldo)
	scaleRows(out, ldo, nv, cols, alpha)
}

// scaleRows multiplies the first cols entries of nv rows of out, ldo
// apart, by alpha (nothing when alpha is 1).
func scaleRows(out []float64, ldo, nv, cols int, alpha float64) {
	if alpha == 1 {
		return
	}
	for w := range nv {
		row := out[w*ldo : w*ldo+cols]
		for j := range row {
			row[j] *= alpha
		}
	}
}

// One computes out = alpha·xᵀM for a row-major rows×cols M (out_j =
// alpha·Σ_l x_l M_lj) by f64.GemvT, which keeps a chunk of out in
// registers while it streams M's rows. For symmetric M it is M x; for skew
// C, xᵀC = −(C x)ᵀ.
func One(out, m []float64, rows, cols int, x []float64, alpha float64) {
	LD(out, m, rows, cols, cols, x, alpha)
}

// LD is One for a matrix with row stride ld ≥ cols.
func LD(out, m []float64, rows, cols, ld int, x []float64, alpha float64) {
	if len(x) < rows || len(out) < cols {
		panic("vecmat: LD: slice too short")
	}
	out = out[:cols]
	f64.GemvT(m, ld, x[:rows], out)
	if alpha != 1 {
		for j := range out {
			out[j] *= alpha
		}
	}
}
