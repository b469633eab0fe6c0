package learn

import (
	"context"
	"fmt"
	"github.com/ndpp-go/ndpp/blas"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// benchBaskets draws baskets with sizes like the Amazon registries
// (mostly 1–4 items, a tail up to 20).
func benchBaskets(n, count int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int, count)
	for i := range out {
		k := 1 + int(rng.ExpFloat64()*1.5)
		k = min(k, 20, n)
		out[i] = rng.Perm(n)[:k]
	}
	return out
}

func BenchmarkOnlineObserve(b *testing.B) {
	for _, d := range []int{10, 30} {
		for _, norm := range []Normalizer{NormBasket, NormExact} {
			b.Run(fmt.Sprintf("n=100/d=%d/norm=%v", d, norm), func(b *testing.B) {
				baskets := benchBaskets(100, 4096, 1)
				o, err := NewOnline(OnlineOptions{D: d, N: 100, Normalizer: norm})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := o.Observe(baskets[i%len(baskets)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkOfflineStep(b *testing.B) {
	for _, d := range []int{10, 30} {
		b.Run(fmt.Sprintf("n=100/d=%d/batch=200", d), func(b *testing.B) {
			baskets := benchBaskets(100, 200, 2)
			p, err := NewParams(100, d, false, 1, InitOptions{})
			if err != nil {
				b.Fatal(err)
			}
			tr := newOfflineTrainer(p, baskets, OfflineOptions{D: d, LR: 1e-4}.withDefaults())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !tr.step(baskets) {
					b.Fatal("diverged")
				}
			}
		})
	}
}

// BenchmarkOnlineVsOffline times the online/offline bar on the Amazon
// apparel registries in testdata/ (d = 30, the 300 validation / 2000 test
// split of ndpp-bench learn): per iteration, on each of the splits of seeds
// 1–3, the offline learner and then one online pass, alternating so that the
// machine's drift in speed hits both alike. It reports each learner's mean
// training seconds and the ratio of the means (the bar: ≤ 0.1). Run it with
// -benchtime=3x or more; single runs vary by up to 1.5×.
func BenchmarkOnlineVsOffline(b *testing.B) {
	data, n := apparel(b)
	var off, on float64
	for b.Loop() {
		for seed := uint64(1); seed <= 3; seed++ {
			train, val, _, err := baskets.HoldOutSlice(data, 300, 2000, seed)
			if err != nil {
				b.Fatal(err)
			}
			// Each learner starts with the other's garbage collected,
			// as in a process of its own.
			runtime.GC()
			ro, err := TrainOffline(context.Background(), train, val, n, OfflineOptions{D: 30, Seed: seed})
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			rn, err := TrainOnline(context.Background(), sliceSource(train), OnlineOptions{D: 30, N: n, Seed: seed}, OnlineRun{})
			if err != nil {
				b.Fatal(err)
			}
			off += ro.Seconds
			on += rn.Seconds
		}
	}
	runs := float64(3 * b.N)
	b.ReportMetric(off/runs, "offline-s")
	b.ReportMetric(on/runs, "online-s")
	b.ReportMetric(on/off, "online/offline")
}

// BenchmarkOnlinePass times one online pass (default options, d = 30) on
// the Amazon apparel registries (100 items; the training part of seed 1's
// split, as ndpp-bench learn) and on a synthetic catalogue of 2,000 items
// (20,000 baskets of registry-like sizes). Each pass starts with the
// previous one's garbage collected.
func BenchmarkOnlinePass(b *testing.B) {
	b.Run("data=apparel/d=30", func(b *testing.B) {
		data, n := apparel(b)
		train, _, _, err := baskets.HoldOutSlice(data, 300, 2000, 1)
		if err != nil {
			b.Fatal(err)
		}
		benchPass(b, train, n)
	})
	synthetic := benchBaskets(2000, 20000, 3)
	b.Run("data=synthetic/n=2000/d=30", func(b *testing.B) {
		benchPass(b, synthetic, 2000)
	})
}

func benchPass(b *testing.B, baskets [][]int, n int) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		if _, err := TrainOnline(context.Background(), sliceSource(baskets), OnlineOptions{D: 30, N: n, Seed: 1}, OnlineRun{}); err != nil {
			b.Fatal(err)
		}
	}
}

// apparel reads the Amazon apparel registries in testdata/ and returns the
// baskets and the number of items (it skips the benchmark without them).
func apparel(b *testing.B) ([][]int, int) {
	voc, err := ndpp.NewVocab(nil)
	if err != nil {
		b.Fatal(err)
	}
	data, err := baskets.ReadFile("../testdata/1_100_100_100_apparel_regs.csv", baskets.LineOptions{Vocab: voc, Grow: true})
	if err != nil {
		b.Skip("apparel registries not available:", err)
	}
	return data, voc.Len()
}

// BenchmarkOnlineCatalogue times one online pass (default options, d = 30)
// over 10⁵ synthetic baskets (baskets.NewSynthetic: mean size 8, power-law
// popularity, co-purchases within topics) drawn from catalogues of 10² to
// 10⁵ items, read from memory, without and with the next-item term.
// ns/basket shows how the cost of a step depends on the catalogue's size n.
func BenchmarkOnlineCatalogue(b *testing.B) {
	const count = 100_000
	for _, n := range []int{100, 1_000, 10_000, 100_000} {
		src, err := baskets.NewSynthetic(baskets.SyntheticOptions{N: n, Count: count, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		var data [][]int
		for {
			bk, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			data = append(data, append([]int(nil), bk...))
		}
		for _, w := range []float64{0, 0.02} {
			name := fmt.Sprintf("n=%d/d=30", n)
			if w > 0 {
				name += fmt.Sprintf("/next-weight=%g", w)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					runtime.GC()
					b.StartTimer()
					if _, err := TrainOnline(context.Background(), sliceSource(data), OnlineOptions{D: 30, Seed: 1, NextWeight: w}, OnlineRun{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(data)), "ns/basket")
			})
		}
	}
}

// BenchmarkOfflineStepNext times one offline step at UK Online Retail's
// shape (3,803 items, baskets of 19 items on average, the default
// minibatch of 950) at the default d and at d = 100, without and with
// the next-item term.
func BenchmarkOfflineStepNext(b *testing.B) {
	const n = 3803
	for _, d := range []int{DefaultOfflineD, 100} {
		rng := rand.New(rand.NewPCG(5, 1))
		baskets := make([][]int, 950)
		for i := range baskets {
			k := 2 + int(rng.ExpFloat64()*17)
			baskets[i] = rng.Perm(n)[:min(k, 100)]
		}
		blas.SetThreads(1) // as the commands run: ndpp parallelises itself
		for _, c := range []struct {
			w, share float64
			neg      int
		}{{-1, 1, 0}, {0.5, 1, 8}, {0.5, 1, 32}, {0.5, 0.25, 32}, {DefaultNextWeight, DefaultNextShare, DefaultLikelihoodNextNegatives}} {
			w := c.w
			name := fmt.Sprintf("n=%d/d=%d/next-weight=%g/negatives=%d/share=%g", n, d, w, c.neg, c.share)
			if w < 0 {
				name = fmt.Sprintf("n=%d/d=%d/next-weight=none", n, d)
			}
			b.Run(name, func(b *testing.B) {
				p, err := NewParams(n, d, false, 1, InitOptions{})
				if err != nil {
					b.Fatal(err)
				}
				tr := newOfflineTrainer(p, baskets, OfflineOptions{D: d, LR: 1e-4, NextWeight: w, NextNegatives: c.neg, NextShare: c.share}.withDefaults())
				b.ReportAllocs()
				for b.Loop() {
					if !tr.step(baskets) {
						b.Fatal("diverged")
					}
				}
			})
		}
	}
}
