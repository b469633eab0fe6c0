package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/ndpp-go/ndpp/blas" // the default backend (auto with OpenBLAS)
	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// One OpenBLAS thread, as ndpp-bench runs it: the measurements are per core.
func init() { blas.SetThreads(1) }

// benchStream runs a whole stream per iteration and reports items/s. The
// fast oracle runs the default path (block scoring) and, as method=oracle,
// with every value through the oracle; the naive oracle always runs
// oracle-only (its purpose is timing the oracle).
func benchStream(b *testing.B, name string, k, d int) {
	for _, ok := range oracleKinds() {
		n := 200000
		if ok.name == "naive" {
			n = 5000
			if name == NameOnline2Neighbor {
				n = 1000
			}
		}
		m := ndpp.Random(n, d, 1, ndpp.RandomOptions{})
		order := IDOrder(n)
		methods := []string{""} // naive: always oracle-only
		if ok.name != "naive" {
			methods = []string{"", "/method=oracle"}
		}
		for _, method := range methods {
			mk := algoByName(name, method != "" || ok.name == "naive")
			b.Run(fmt.Sprintf("k=%d/d=%d/oracle=%s%s", k, d, ok.name, method), func(b *testing.B) {
				b.ReportAllocs()
				var evals, swaps int64
				for i := 0; i < b.N; i++ {
					o, err := ok.new(m, k)
					if err != nil {
						b.Fatal(err)
					}
					s, err := mk(o, k, n)
					if err != nil {
						b.Fatal(err)
					}
					res, err := Run(context.Background(), s, order, RunOptions{})
					if err != nil {
						b.Fatal(err)
					}
					evals, swaps = res.Evals, res.Swaps
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
				b.ReportMetric(float64(evals)/float64(n), "evals/item")
				b.ReportMetric(float64(swaps), "swaps")
			})
		}
	}
}

func algoByName(name string, oracleOnly bool) func(o oracleArg, k, n int) (Solver, error) {
	for _, a := range algosOpt(DefaultAlpha, 0, oracleOnly) {
		if a.name == name {
			return a.mk
		}
	}
	panic("no algorithm " + name)
}

func BenchmarkStreamPartition(b *testing.B) { benchStream(b, NameStreamPartition, 8, 10) }
func BenchmarkOnlineLSS(b *testing.B)       { benchStream(b, NameOnlineLSS, 8, 10) }
func BenchmarkOnline2Neighbor(b *testing.B) { benchStream(b, NameOnline2Neighbor, 8, 10) }
func BenchmarkOnlineGreedy(b *testing.B)    { benchStream(b, NameOnlineGreedy, 8, 10) }

func BenchmarkOfflineGreedy(b *testing.B) {
	for _, c := range []struct{ n, d, k int }{{400000, 100, 8}, {100000, 10, 8}} {
		m := ndpp.Random(c.n, c.d, 1, ndpp.RandomOptions{})
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("n=%d/d=%d/k=%d", c.n, c.d, c.k)
			if workers > 1 {
				name += fmt.Sprintf("/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := OfflineGreedy(context.Background(), m, c.k, GreedyOptions{Workers: workers}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}

// benchVectors runs a whole stream of vector items per iteration on the
// fast oracle of the model's kernel, with block scoring, blocks filled from
// the source, and reports items/s and the process's CPU time per item
// (cpu-ns/item; 0 where it cannot be read). Two sources: the model's items
// copied into reused buffers as they are read (ModelSource, as a reader
// delivers them: "vectors"), and items already in memory as vectors,
// handed out without copies (SliceSource: "vectors/source=slice").
func benchVectors(b *testing.B, name string, k, d, n int) {
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{})
	order := IDOrder(n)
	b.Run(fmt.Sprintf("k=%d/d=%d/vectors", k, d), func(b *testing.B) {
		runVectors(b, name, m, k, func() LenSource { return ModelSource(m, order) })
	})
	items := make([]ndpp.Item, n) // views of the model's rows
	vRows, bRows, _, _ := m.Rows()
	for i := range items {
		items[i] = ndpp.Item{ID: i, V: vRows[i*d : (i+1)*d], B: bRows[i*d : (i+1)*d]}
	}
	b.Run(fmt.Sprintf("k=%d/d=%d/vectors/source=slice", k, d), func(b *testing.B) {
		runVectors(b, name, m, k, func() LenSource { return SliceSource(items) })
	})
}

// runVectors is benchVectors' loop for one source.
func runVectors(b *testing.B, name string, m *ndpp.Model, k int, src func() LenSource) {
	n := m.N()
	mk := algoByName(name, false)
	b.ReportAllocs()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		o, err := detcache.NewFastKernel(ndpp.KernelOf(m), k)
		if err != nil {
			b.Fatal(err)
		}
		s, err := mk(o, k, n)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := RunItems(context.Background(), s, src(), RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/(float64(n)*float64(b.N)), "cpu-ns/item")
}

func BenchmarkVectorsOnlineLSS(b *testing.B) {
	benchVectors(b, NameOnlineLSS, 8, 10, 200000)
	benchVectors(b, NameOnlineLSS, 32, 50, 50000)
}

func BenchmarkVectorsOnline2Neighbor(b *testing.B) {
	benchVectors(b, NameOnline2Neighbor, 8, 10, 200000)
	benchVectors(b, NameOnline2Neighbor, 32, 50, 20000)
}

func BenchmarkVectorsStreamPartition(b *testing.B) {
	benchVectors(b, NameStreamPartition, 8, 10, 200000)
}

// BenchmarkOnlineLSSStream is Online-LSS (k = 8, d = 10, the fast oracle,
// block scoring) over the 4·10⁶ items of an ndpp.Random model in id order,
// model-backed (Run), one thread, on each BLAS backend of the binary (the
// block's products run in internal/f64 on every backend): the in-memory
// rate of stream/BENCHMARKS.md. It reports items/s, the process's CPU time
// per item (cpu-ns/item; 0 where it cannot be read) and the solution's
// swaps, and logs its value (to compare builds).
func BenchmarkOnlineLSSStream(b *testing.B) {
	const n, k, d = 4_000_000, 8, 10
	m := ndpp.Random(n, d, 1, ndpp.RandomOptions{})
	order := IDOrder(n)
	mk := algoByName(NameOnlineLSS, false)
	prev := blas.Backend()
	defer func() { _ = blas.Use(prev) }()
	for _, backend := range blas.Available() {
		b.Run(fmt.Sprintf("n=%d/k=%d/d=%d/backend=%s", n, k, d, backend), func(b *testing.B) {
			if err := blas.Use(backend); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var res Result
			cpu0 := processCPU()
			for b.Loop() {
				o, err := detcache.NewFast(m, k)
				if err != nil {
					b.Fatal(err)
				}
				s, err := mk(o, k, n)
				if err != nil {
					b.Fatal(err)
				}
				if res, err = Run(context.Background(), s, order, RunOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			cpu := processCPU() - cpu0
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/(float64(n)*float64(b.N)), "cpu-ns/item")
			b.ReportMetric(float64(res.Swaps), "swaps")
			b.Logf("log f(S) = %v, S = %v, swaps %d, evals %d", res.Value.Log, res.Solution, res.Swaps, res.Evals)
		})
	}
}
