package stream_test

import (
	"context"
	"fmt"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// Local search from the offline greedy's solution, over single swaps and
// pair swaps within a pool of 16 items.
func ExampleLocalSearch() {
	m := ndpp.Random(2000, 8, 1, ndpp.RandomOptions{})
	const k = 6
	g, err := stream.OfflineGreedy(context.Background(), m, k, stream.GreedyOptions{})
	if err != nil {
		panic(err)
	}
	o, err := detcache.NewFast(m, k)
	if err != nil {
		panic(err)
	}
	res, err := stream.LocalSearch(context.Background(), o, k, g.Solution, stream.LocalSearchOptions{Pool: 16})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Solution), res.Value.Log >= g.Value.Log, res.Capped)
	// Output: 6 true false
}
