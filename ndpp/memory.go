package ndpp

import (
	"errors"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

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

// ErrMemoryBudget is matched (errors.Is) by every refusal of work whose
// estimated memory exceeds its budget, from any package of the module: a
// budget option such as npz.LoadOptions.MaxBytes or
// eval.Options.MaxMemory, or the machine default when the option is zero.
// MemoryBudget reads the sizes of such a refusal.
var ErrMemoryBudget = memlimit.ErrOverBudget

// MemoryBudget returns the estimate and the budget, in bytes, of the
// memory refusal in err's chain, and false when there is none.
func MemoryBudget(err error) (need, limit int64, ok bool) {
	var e *memlimit.Error
	if !errors.As(err, &e) {
		return 0, 0, false
	}
	return e.Need, e.Limit, true
}
