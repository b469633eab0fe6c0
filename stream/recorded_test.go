package stream

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// recordedCase is a seeded stream whose outputs are recorded below.
type recordedCase struct {
	algo          string
	n, d, k       int
	seed          uint64
	alpha         float64
	random        bool // RandomOrder(n, seed) instead of id order
	shared, block bool // ndpp.RandomOptions
	diag          bool // withDiag(m, seed)
}

func (c recordedCase) String() string {
	return fmt.Sprintf("%s n=%d d=%d k=%d seed=%d α=%v random=%v shared=%v block=%v diag=%v",
		c.algo, c.n, c.d, c.k, c.seed, c.alpha, c.random, c.shared, c.block, c.diag)
}

// recorded is a solver's outputs on a recordedCase: the solution, the bits
// of its log value, and the counters.
type recorded struct {
	sol                []int
	logBits            uint64
	evals, adds, swaps int64
	stash, peakStash   int
	items              int64
}

func (r recorded) literal() string {
	return fmt.Sprintf("{%#v, %#x, %d, %d, %d, %d, %d, %d}", r.sol, r.logBits, r.evals, r.adds, r.swaps, r.stash, r.peakStash, r.items)
}

func recordOf(res Result) recorded {
	return recorded{sol: res.Solution, logBits: math.Float64bits(res.Value.Log), evals: res.Evals, adds: res.Adds,
		swaps: res.Swaps, stash: res.Stash, peakStash: res.PeakStash, items: res.Items}
}

// recordedCases are the streams of TestRecordedOutputs with the outputs
// the solvers gave on them on the fast oracle (recorded, not computed): a
// change that only makes the solvers faster leaves them as they are.
var recordedCases = []struct {
	c    recordedCase
	want recorded
}{
	{recordedCase{algo: NameOnlineLSS, n: 200000, d: 10, k: 8, seed: 1, alpha: 1.1}, recorded{[]int{27936, 5142, 9484, 124285, 182750, 38724, 3243, 173120}, 0x4024f0df804d59fc, 1606136, 8, 41, 38, 38, 200000}},
	{recordedCase{algo: NameOnlineLSS, n: 100000, d: 10, k: 8, seed: 2, alpha: 1.01, random: true}, recorded{[]int{13581, 29219, 49209, 7339, 86011, 95596, 38691, 17289}, 0x402478d55edcdea0, 811032, 8, 58, 49, 49, 100000}},
	{recordedCase{algo: NameOnlineLSS, n: 60000, d: 6, k: 5, seed: 3, alpha: 1.1, shared: true, diag: true}, recorded{[]int{28307, 46771, 33846, 52263, 4024}, 0x4032d18a6c25d4da, 303495, 5, 37, 37, 37, 60000}},
	{recordedCase{algo: NameOnlineLSS, n: 40000, d: 20, k: 16, seed: 4, alpha: 1.1, block: true}, recorded{[]int{31933, 10853, 34543, 799, 23351, 6014, 22088, 3305, 1121, 5242, 1286, 15030, 10063, 7721, 16082, 5465}, 0x402229d3286f89b3, 667168, 16, 63, 56, 56, 40000}},
	{recordedCase{algo: NameOnlineLSS, n: 40000, d: 4, k: 8, seed: 5, alpha: 1.1, random: true}, recorded{[]int{24681, 6562, 27003, 26915, 8988, 26975, 25881, 14252}, 0x4024e02f0bb1877e, 327768, 8, 47, 41, 41, 40000}},
	{recordedCase{algo: NameOnlineGreedy, n: 100000, d: 10, k: 8, seed: 6, alpha: 1}, recorded{[]int{80853, 901, 992, 40085, 25057, 91374, 2926, 68709}, 0x4023fb9fe44b6499, 799944, 8, 58, 0, 0, 100000}},
	{recordedCase{algo: NameOnline2Neighbor, n: 20000, d: 10, k: 8, seed: 7, alpha: 1.1}, recorded{[]int{673, 111, 2, 13174, 961, 2098, 1004, 717}, 0x402280fa8ac19ee3, 789784, 8, 24, 24, 24, 20000}},
	{recordedCase{algo: NameStreamPartition, n: 100000, d: 10, k: 8, seed: 8, alpha: 1.1, diag: true}, recorded{[]int{817, 18359, 35933, 42197, 53962, 69243, 81903, 96335}, 0x403fc8f99f0730f7, 100000, 8, 0, 0, 0, 100000}},
}

// TestRecordedOutputs: on seeded streams of up to 2·10⁵ items, the
// solvers give the recorded solutions, the bits of the recorded values and
// the recorded counters (evaluations, adds, swaps, stash), from a model's
// items (Run) and from vector items (RunItems), and so does the one-item
// path (RunOptions.OneAtATime). Values are compared bit for bit on amd64
// (see recordedBitsExact), elsewhere to 10⁻⁹ relative.
func TestRecordedOutputs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("long streams")
	}
	exact := recordedBitsExact()
	for _, rc := range recordedCases {
		c := rc.c
		m := ndpp.Random(c.n, c.d, c.seed, ndpp.RandomOptions{Shared: c.shared, BlockDiagonal: c.block})
		if c.diag {
			m = withDiag(m, c.seed)
		}
		order := IDOrder(c.n)
		if c.random {
			order = RandomOrder(c.n, c.seed)
		}
		mk := func(o detcache.Oracle) Solver {
			for _, a := range algosOpt(c.alpha, 0, false) {
				if a.name == c.algo {
					s, err := a.mk(o, c.k, c.n)
					require.NoError(t, err, "%v", c)
					return s
				}
			}
			panic("no algorithm " + c.algo)
		}
		var got []recorded
		var skipped []int64
		for _, one := range []bool{false, true} {
			o, err := detcache.NewFast(m, c.k)
			require.NoError(t, err)
			s := mk(o)
			res, err := Run(context.Background(), s, order, RunOptions{OneAtATime: one})
			require.NoError(t, err, "%v", c)
			got = append(got, recordOf(res))
			if ls, ok := s.(interface{ skippedItems() int64 }); ok {
				skipped = append(skipped, ls.skippedItems())
			}
		}
		ov, err := detcache.NewFastKernel(ndpp.KernelOf(m), c.k)
		require.NoError(t, err)
		res, err := RunItems(context.Background(), mk(ov), ModelSource(m, order), RunOptions{})
		require.NoError(t, err, "%v", c)
		got = append(got, recordOf(res))
		t.Logf("%v: log f(S) = %v, %d swaps, block scoring skipped %v items", c, math.Float64frombits(got[0].logBits), got[0].swaps, skipped)
		if rc.want.sol == nil {
			t.Errorf("%v: no recorded outputs; got %s", c, got[0].literal())
			continue
		}
		for i, g := range got {
			path := []string{"Run", "Run one at a time", "RunItems"}[i]
			w := rc.want
			if !exact {
				wl, gl := math.Float64frombits(w.logBits), math.Float64frombits(g.logBits)
				require.InDelta(t, wl, gl, 1e-9*max(1, math.Abs(wl)), "%v, %s: value", c, path)
				w.logBits = g.logBits
			}
			require.Equal(t, w.literal(), g.literal(), "%v, %s: outputs (want, got)", c, path)
		}
	}
}

// recordedBitsExact reports whether this build's values can be compared
// with the recorded bits: on amd64, where the Go code's products are
// rounded on their own (no fused multiply-adds) and the values came out
// the same in the pure-Go, noasm and OpenBLAS builds.
func recordedBitsExact() bool { return runtime.GOARCH == "amd64" }
