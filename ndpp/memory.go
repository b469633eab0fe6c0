package ndpp

import "github.com/ndpp-go/ndpp/internal/memlimit"

// RandomMemory estimates the bytes of a synthetic model of n items and
// rank d (Random) together with a MAP inference pass over its items (as
// ndpp-bench infer --synthetic runs): the model's V, B and BC rows (3·n·d
// float64s), four per-item values (the diagonal and the pass's per-item
// arrays, such as the stream order) and eight 2d×2d matrices (the
// determinant oracles'). It returns -1 when the estimate overflows an
// int64 or n or d is negative; a memory budget (memlimit) refuses that.
func RandomMemory(n, d int) int64 {
	nn, dd := int64(n), int64(d)
	return memlimit.Sum(memlimit.Bytes(nn, dd, 3*8), memlimit.Bytes(nn, 4*8), memlimit.Bytes(2*dd, 2*dd, 8*8))
}
