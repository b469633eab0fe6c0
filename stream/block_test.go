package stream

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
)

// TestBatchIdentical: block scoring (ObserveBatch through Run) gives the
// same solutions, values, counters and trajectories as observing one item at
// a time, on many seeded streams including near-singular models, on every
// oracle; and the filter actually skips items.
func TestBatchIdentical(t *testing.T) {
	seeds := 32
	if testing.Short() || raceEnabled {
		seeds = 16
	}
	var skippedTotal, itemsTotal int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 21))
		var m *ndpp.Model
		if seed%4 == 0 {
			m = instance(seed) // small, often near-singular
		} else {
			d := 2 + rng.IntN(5)
			m = ndpp.Random(250+rng.IntN(400), d, seed, ndpp.RandomOptions{Shared: seed%3 == 0, BlockDiagonal: seed%5 == 0})
		}
		k := 1 + rng.IntN(min(2*m.D(), 8))
		if m.N() > 200 && raceEnabled {
			k = min(k, 4)
		}
		alpha := []float64{1, 1.01, 1.1, 1.5}[rng.IntN(4)]
		order := IDOrder(m.N())
		if seed%2 == 1 {
			order = RandomOrder(m.N(), seed)
		}
		every := 1 + rng.IntN(200)
		for _, a := range algos(alpha, []int{0, 2}[rng.IntN(2)]) {
			order := order
			if a.name == NameOnline2Neighbor {
				order = order[:min(len(order), 150)] // 2-neighbor on the naive oracle is slow
			}
			for _, ok := range oracleKinds() {
				var res [2]Result
				var traj [2][]Point
				var skipped int64
				for p, one := range []bool{true, false} {
					o, err := ok.new(m, k)
					if err != nil {
						t.Fatal(err)
					}
					s, err := a.mk(o, k, len(order))
					if err != nil {
						t.Fatal(err)
					}
					res[p], err = Run(s, order, RunOptions{OneAtATime: one, Every: every, Trajectory: func(pt Point) { traj[p] = append(traj[p], pt) }})
					if err != nil {
						t.Fatal(err)
					}
					if ls, ok := s.(interface{ skippedItems() int64 }); ok {
						skipped = ls.skippedItems()
					}
				}
				r1, r2 := res[0], res[1]
				if !slices.Equal(r1.Solution, r2.Solution) || r1.Value != r2.Value || r1.Evals != r2.Evals || r1.Swaps != r2.Swaps ||
					r1.Adds != r2.Adds || r1.Stash != r2.Stash || r1.PeakStash != r2.PeakStash || r1.Items != r2.Items {
					t.Errorf("seed %d %s/%s k=%d α=%v: one at a time %+v, batched %+v", seed, a.name, ok.name, k, alpha, r1, r2)
				}
				if !slices.Equal(traj[0], traj[1]) {
					t.Errorf("seed %d %s/%s: trajectories differ:\n%v\n%v", seed, a.name, ok.name, traj[0], traj[1])
				}
				if ok.name == "fast" {
					skippedTotal += skipped
					itemsTotal += r2.Items
				}
			}
		}
	}
	t.Logf("block filter skipped %d of %d items", skippedTotal, itemsTotal)
	if skippedTotal < itemsTotal/2 {
		t.Errorf("block filter skipped only %d of %d items", skippedTotal, itemsTotal)
	}
}

// TestBatchErrors: a bad item inside a batch is reported with its stream
// position; the items before it were processed.
func TestBatchErrors(t *testing.T) {
	m := ndpp.Random(600, 4, 5, ndpp.RandomOptions{})
	for _, bad := range []int{-1, 600} {
		o, _ := naiveKind().new(m, 3)
		s, _ := NewOnlineLSS(o, 3, Options{})
		order := IDOrder(500)
		order[400] = bad
		_, err := Run(s, order, RunOptions{})
		if err == nil {
			t.Fatalf("bad item %d accepted", bad)
		}
		if got := s.Stats().Items; got != 400 {
			t.Errorf("%d items processed before the bad one, want 400 (%v)", got, err)
		}
		t.Log(err)
	}
	// An item of the solution repeated later in the batch.
	o, _ := naiveKind().new(m, 3)
	s, _ := NewOnlineLSS(o, 3, Options{})
	if err := s.ObserveBatch(IDOrder(300)); err != nil {
		t.Fatal(err)
	}
	sol := s.Solution()
	if err := s.ObserveBatch([]int{300, 301, sol[1], 302}); err == nil {
		t.Error("repeated solution item accepted")
	} else if be, ok := err.(*BatchError); !ok || be.Index != 2 {
		t.Errorf("error %v, want a BatchError at index 2", err)
	}
}

// TestBatchNearTies: streams full of (near-)copies of earlier items put
// many swap ratios at or within rounding of 1 and of α; block scoring must
// still agree with the one-at-a-time path.
func TestBatchNearTies(t *testing.T) {
	seeds := uint64(8)
	if raceEnabled {
		seeds = 3
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		d, n := 3, 250
		base := ndpp.Random(n, d, seed, ndpp.RandomOptions{})
		v, b, _, c := base.Rows()
		v, b = slices.Clone(v), slices.Clone(b)
		for i := 60; i < n; i++ {
			j := rng.IntN(60)
			s := []float64{1, -1, 1.05, 0.999}[rng.IntN(4)] * (1 + []float64{0, 1e-12, 1e-8}[rng.IntN(3)])
			// Some copies get a small independent perturbation, so that a
			// solution holding an item and its copy has a condition number
			// around the filter's limit rather than far beyond it.
			pert := []float64{0, 0, 1e-2, 1e-3, 1e-4}[rng.IntN(5)]
			for q := 0; q < d; q++ {
				v[i*d+q] = s*v[j*d+q] + pert*rng.NormFloat64()
				b[i*d+q] = s*b[j*d+q] + pert*rng.NormFloat64()
			}
		}
		m, err := ndpp.NewFromRows(n, d, v, b, c)
		if err != nil {
			t.Fatal(err)
		}
		k := 2 + rng.IntN(4)
		for _, alpha := range []float64{1, 1.05 * 1.05, 1.1} {
			for _, a := range algos(alpha, 0) {
				for _, ok := range oracleKinds() {
					var res [2]Result
					for p, one := range []bool{true, false} {
						o, _ := ok.new(m, k)
						s, err := a.mk(o, k, n)
						if err != nil {
							t.Fatal(err)
						}
						if res[p], err = Run(s, IDOrder(n), RunOptions{OneAtATime: one}); err != nil {
							t.Fatal(err)
						}
					}
					r1, r2 := res[0], res[1]
					if !slices.Equal(r1.Solution, r2.Solution) || r1.Value != r2.Value || r1.Evals != r2.Evals || r1.Swaps != r2.Swaps || r1.PeakStash != r2.PeakStash {
						t.Errorf("seed %d %s/%s α=%v: one at a time %+v, batched %+v", seed, a.name, ok.name, alpha, r1, r2)
					}
				}
			}
		}
	}
}
