package eval_test

import (
	"context"
	"fmt"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// A model beside the baselines: the test baskets held out by the rule of
// every command (baskets.HoldOutSlice), the model and the baselines scored
// by the papers' protocol.
func ExampleCompare() {
	// Items come in pairs {2g, 2g+1} that are bought together.
	var data [][]int
	for i := range 3000 {
		g := (i * 7) % 10
		if i%3 == 0 {
			data = append(data, []int{2 * g})
		} else {
			data = append(data, []int{2 * g, 2*g + 1})
		}
	}
	train, _, test, err := baskets.HoldOutSlice(data, 0, 500, 1)
	if err != nil {
		panic(err)
	}
	model := ndpp.Random(20, 4, 1, ndpp.RandomOptions{}) // a model learned elsewhere
	cmp, err := eval.Compare(context.Background(), []*ndpp.Model{model}, test, eval.Training{Baskets: train},
		eval.CompareOptions{Options: eval.Options{Seed: 1}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("co-occurrence ranks above popularity: %v; above the random model: %v\n",
		cmp.Cooccurrence.MPR > cmp.Independent.MPR, cmp.Cooccurrence.MPR > cmp.Models[0].MPR)
	// Output: co-occurrence ranks above popularity: true; above the random model: true
}
