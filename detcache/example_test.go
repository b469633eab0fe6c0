package detcache_test

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// A solution of three items is filled, then an arriving item is scored
// against every position and swapped in where it helps most.
func ExampleNewFast() {
	m := ndpp.Random(100, 4, 1, ndpp.RandomOptions{})
	o, err := detcache.NewFast(m, 3)
	if err != nil {
		panic(err)
	}
	c := o.NewCand()
	for _, item := range []int{10, 20, 30} {
		o.Prepare(c, item)
		if err := o.Add(c); err != nil {
			panic(err)
		}
	}
	o.Prepare(c, 40)
	swaps := make([]ndpp.Value, o.Len())
	o.SwapValues(c, swaps)
	best := 0
	for j := range swaps {
		if swaps[j].Greater(swaps[best]) {
			best = j
		}
	}
	if swaps[best].Greater(o.Value()) {
		if err := o.Swap(best, c); err != nil {
			panic(err)
		}
	}
	fmt.Println("solution:", o.Items(), "evaluations:", o.Evals())
	// Output: solution: [10 40 30] evaluations: 3
}

// The fast and the naive oracle give the same values; the naive one
// recomputes each with a fresh LU.
func ExampleNewNaive() {
	m := ndpp.Random(50, 3, 2, ndpp.RandomOptions{})
	fast, _ := detcache.NewFast(m, 4)
	naive, _ := detcache.NewNaive(m, 4)
	for _, o := range []detcache.Oracle{fast, naive} {
		x, y := o.NewCand(), o.NewCand()
		for _, item := range []int{1, 2, 3, 4} {
			o.Prepare(x, item)
			_ = o.Add(x)
		}
		o.Prepare(x, 7)
		o.Prepare(y, 8)
		v := o.PairSwapValue(x, y, 0, 2) // S − {1, 3} + {7, 8}
		fmt.Printf("%.6f %v\n", v.Log, v.Zero)
	}
	// Output:
	// 0.366122 false
	// 0.366122 false
}

// A block of arriving items is scored against the solution at once; only
// the items whose swaps the block cannot rule out from beating f(S)·1.1 go
// through Prepare and SwapValues.
func ExampleFast_ScoreBlock() {
	m := ndpp.Random(300, 3, 3, ndpp.RandomOptions{})
	o, _ := detcache.NewFast(m, 4)
	c := o.NewCand()
	for _, item := range []int{0, 1, 2, 3} {
		o.Prepare(c, item)
		_ = o.Add(c)
	}
	arriving := make([]int, 0, 256)
	for item := 4; item < 260; item++ {
		arriving = append(arriving, item)
	}
	b := o.NewBlock(len(arriving))
	bar := o.Value().Log + math.Log(1.1) // a swap must beat f(S)·1.1
	o.ScoreBlock(b, arriving)
	var candidates []int
	for col, item := range arriving {
		if !b.SwapsBelow(col, bar) {
			candidates = append(candidates, item)
		}
	}
	swaps := make([]ndpp.Value, o.Len())
	beats := 0
	for _, item := range candidates {
		o.Prepare(c, item)
		o.SwapValues(c, swaps)
		for _, v := range swaps {
			if v.Greater(ndpp.Value{Log: bar}) {
				beats++
				break
			}
		}
	}
	fmt.Printf("%d arriving, %d not ruled out, %d beat f(S)·1.1\n", len(arriving), len(candidates), beats)
	// Output: 256 arriving, 184 not ruled out, 184 beat f(S)·1.1
}
