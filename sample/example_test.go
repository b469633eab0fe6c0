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
