package detcache

import (
	"fmt"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// benchSizes are the (k, d) pairs of the benchmark tables.
var benchSizes = []struct{ k, d int }{{8, 10}, {16, 50}, {50, 50}, {100, 100}}

// benchOracle returns an oracle of the given method holding a full solution
// of k random items of a Gaussian model with n = 20·k items, and the
// arriving items (the items not in S) in a fixed order.
func benchOracle(b *testing.B, method string, k, d int) (Oracle, []int) {
	b.Helper()
	n := 20 * k
	m := ndpp.Random(n, d, uint64(1000*k+d), ndpp.RandomOptions{})
	var o Oracle
	var err error
	if method == "fast" {
		o, err = NewFast(m, k)
	} else {
		o, err = NewNaive(m, k)
	}
	if err != nil {
		b.Fatal(err)
	}
	c := o.NewCand()
	for i := 0; i < k; i++ {
		o.Prepare(c, i*20)
		if err := o.Add(c); err != nil {
			b.Fatal(err)
		}
	}
	if o.Value().Zero {
		b.Fatal("benchmark solution is singular")
	}
	var arriving []int
	for i := 0; i < n; i++ {
		if i%20 != 0 {
			arriving = append(arriving, i)
		}
	}
	return o, arriving
}

// BenchmarkSwapScores measures scoring one arriving item against the
// solution: Prepare + AddValue + SwapValues (k + 1 values).
func BenchmarkSwapScores(b *testing.B) {
	for _, sz := range benchSizes {
		for _, method := range []string{"fast", "naive"} {
			b.Run(fmt.Sprintf("k=%d/d=%d/method=%s", sz.k, sz.d, method), func(b *testing.B) {
				o, arriving := benchOracle(b, method, sz.k, sz.d)
				c := o.NewCand()
				dst := make([]ndpp.Value, sz.k)
				start := o.Stats()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					o.Prepare(c, arriving[i%len(arriving)])
					_ = o.AddValue(c)
					o.SwapValues(c, dst)
				}
				b.StopTimer()
				st := o.Stats()
				b.ReportMetric(float64(st.Fallbacks-start.Fallbacks)/float64(st.Evals-start.Evals), "fallbacks/eval")
			})
		}
	}
}

// BenchmarkPairSwapScores measures scoring a pair of arriving items against
// every pair of positions: Prepare x, Prepare y, then PairSwapValue for all
// k(k−1)/2 position pairs. The naive oracle is skipped at k = 100 (one
// operation is 4950 fresh 100×100 LUs, tens of seconds).
func BenchmarkPairSwapScores(b *testing.B) {
	for _, sz := range benchSizes {
		for _, method := range []string{"fast", "naive"} {
			if method == "naive" && sz.k > 50 {
				continue
			}
			b.Run(fmt.Sprintf("k=%d/d=%d/method=%s", sz.k, sz.d, method), func(b *testing.B) {
				o, arriving := benchOracle(b, method, sz.k, sz.d)
				x, y := o.NewCand(), o.NewCand()
				start := o.Stats()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					o.Prepare(x, arriving[(2*i)%len(arriving)])
					o.Prepare(y, arriving[(2*i+1)%len(arriving)])
					for a := 0; a < sz.k; a++ {
						for bb := a + 1; bb < sz.k; bb++ {
							_ = o.PairSwapValue(x, y, a, bb)
						}
					}
				}
				b.StopTimer()
				st := o.Stats()
				b.ReportMetric(float64(st.Fallbacks-start.Fallbacks)/float64(st.Evals-start.Evals), "fallbacks/eval")
			})
		}
	}
}

// BenchmarkSwapUpdate compares applying an accepted swap with the O(k²)
// update of M⁻¹ (method=lowrank; includes refreshing the Cand, the swap's
// value and the O(k²) condition estimate) with refactoring L_S from scratch
// (method=refactor, the O(k³) LU and inverse alone).
func BenchmarkSwapUpdate(b *testing.B) {
	for _, sz := range []struct{ k, d int }{{4, 10}, {8, 10}, {16, 50}, {50, 50}, {100, 100}} {
		for _, method := range []string{"lowrank", "refactor"} {
			b.Run(fmt.Sprintf("k=%d/d=%d/method=%s", sz.k, sz.d, method), func(b *testing.B) {
				o, arriving := benchOracle(b, "fast", sz.k, sz.d)
				f := o.(*Fast)
				x, y := f.NewCand(), f.NewCand()
				f.Prepare(x, arriving[0])
				f.Prepare(y, f.Items()[0])
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if method == "refactor" {
						f.refactor(false)
						continue
					}
					c := x
					if i%2 == 1 {
						c = y
					}
					if err := f.Swap(0, c); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if f.Direct() {
					b.Fatal("direct mode")
				}
			})
		}
	}
}

// BenchmarkScoreBlock measures block scoring of the arriving items (at most
// 256 at once) against a full solution, per item: ScoreBlock, then
// SwapsBelow for every column
// (test=swaps), or also PairsBelow for every pair of consecutive columns
// (test=pairs), at a threshold far above every move (f(S)·e²⁰), so that
// every test runs over all positions: the cost of ruling an item out.
func BenchmarkScoreBlock(b *testing.B) {
	for _, sz := range benchSizes {
		for _, test := range []string{"swaps", "pairs"} {
			if test == "pairs" && sz.k > 16 {
				continue
			}
			b.Run(fmt.Sprintf("k=%d/d=%d/test=%s", sz.k, sz.d, test), func(b *testing.B) {
				o, arriving := benchOracle(b, "fast", sz.k, sz.d)
				f := o.(*Fast)
				size := min(256, len(arriving))
				blk := f.NewBlock(size)
				bar := f.Value().Log + 20
				below := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lo := (i * size) % (len(arriving) - size + 1)
					items := arriving[lo : lo+size]
					if !f.ScoreBlock(blk, items) {
						b.Fatal("direct mode")
					}
					for c := range items {
						if blk.SwapsBelow(c, bar) && (test == "swaps" || c == 0 || blk.PairsBelow(c-1, c, bar)) {
							below++
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/item")
				b.ReportMetric(float64(below)/float64(b.N*size), "below/item")
			})
		}
	}
}
