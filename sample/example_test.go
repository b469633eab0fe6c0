package sample_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/sample"
)

// Exact samples of a model with a diagonal, and samples given that items 3
// and 7 are in Y.
func ExampleSampler() {
	m := ndpp.Random(1000, 5, 1, ndpp.RandomOptions{Diag: 0.001})
	ctx := context.Background()
	s, err := sample.New(ctx, m, sample.Options{})
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	y, err := s.Sample(ctx, rng) // sorted item indices
	if err != nil {
		panic(err)
	}
	fmt.Println(len(y) > 0, s.ExpectedSize() > 0)

	g, err := s.Given(context.Background(), []int{3, 7})
	if err != nil {
		panic(err)
	}
	if y, err = g.Sample(ctx, rng); err != nil {
		panic(err)
	}
	fmt.Println(g.GivenItems(), len(y) >= 2)
	// Output:
	// true true
	// [3 7] true
}

// Samples of exactly 4 items, two of them given.
func ExampleKSampler() {
	m := ndpp.Random(1000, 5, 1, ndpp.RandomOptions{Diag: 0.001})
	ctx := context.Background()
	ks, err := sample.NewK(ctx, m, 4, sample.KOptions{Given: []int{3, 7}})
	if err != nil {
		panic(err)
	}
	y, err := ks.Sample(ctx, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	tries, err := ks.ExpectedTries(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(y), tries >= 1)
	// Output:
	// 4 true
}

// The tree sampler on an orthogonal kernel: its proposal's expected
// number of rejections, then samples.
func ExampleTreeSampler() {
	ctx := context.Background()
	m, err := sample.Synthetic(ctx, 20000, 10, 1, sample.SyntheticOptions{Rejections: 20})
	if err != nil {
		panic(err)
	}
	p, err := sample.NewProposal(ctx, m)
	if err != nil {
		panic(err)
	}
	ts, err := sample.NewTree(ctx, p, sample.TreeOptions{})
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		if _, err := ts.Sample(ctx, rng); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%.0f expected rejections, %d samples\n", p.ExpectedRejections(), ts.Stats().Samples)
	// Output:
	// 20 expected rejections, 3 samples
}
