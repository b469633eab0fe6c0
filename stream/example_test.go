package stream_test

import (
	"context"
	"fmt"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// Online-LSS over a model's items in a seeded random order.
func ExampleNewOnlineLSS() {
	m := ndpp.Random(1000, 5, 1, ndpp.RandomOptions{})
	o, err := detcache.NewNaive(m, 4)
	if err != nil {
		panic(err)
	}
	s, err := stream.NewOnlineLSS(o, 4, stream.Options{Alpha: 1.1})
	if err != nil {
		panic(err)
	}
	res, err := stream.Run(context.Background(), s, stream.RandomOrder(m.N(), 7), stream.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Algo, "items:", res.Items, "|S|:", len(res.Solution), "f(S) > 0:", !res.Objective().Zero)
	// Output: online-lss items: 1000 |S|: 4 f(S) > 0: true
}

// Saving a solver mid-stream and continuing from the saved state.
func ExampleOnline2Neighbor_MarshalBinary() {
	m := ndpp.Random(200, 3, 2, ndpp.RandomOptions{})
	o1, _ := detcache.NewNaive(m, 3)
	s1, _ := stream.NewOnline2Neighbor(o1, 3, stream.Options{})
	order := stream.IDOrder(m.N())
	for _, it := range order[:100] {
		if err := s1.Observe(it); err != nil {
			panic(err)
		}
	}
	snap, _ := s1.MarshalBinary()

	o2, _ := detcache.NewNaive(m, 3)
	s2, _ := stream.NewOnline2Neighbor(o2, 3, stream.Options{})
	if err := s2.UnmarshalBinary(snap); err != nil {
		panic(err)
	}
	for _, it := range order[100:] {
		_ = s1.Observe(it)
		_ = s2.Observe(it)
	}
	fmt.Println(fmt.Sprint(s1.Solution()) == fmt.Sprint(s2.Solution()), s1.Stats().Items == s2.Stats().Items)
	// Output: true true
}

// The offline greedy baseline and exact MAP on a small model.
func ExampleOfflineGreedy() {
	m := ndpp.Random(12, 3, 3, ndpp.RandomOptions{})
	g, err := stream.OfflineGreedy(context.Background(), m, 3, stream.GreedyOptions{})
	if err != nil {
		panic(err)
	}
	opt, err := stream.ExactMAP(context.Background(), m, 3, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(g.Solution), g.Objective().Log <= opt.Objective().Log+1e-9)
	// Output: 3 true
}
