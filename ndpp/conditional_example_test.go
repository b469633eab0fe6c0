package ndpp_test

import (
	"fmt"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Next-item scores for several baskets at once: the items of all baskets
// go through a few large matrix products. Each basket gets its own
// outcome; items in a basket score 0.
func ExampleModel_ConditionalGainsBatch() {
	m := ndpp.Random(5, 2, 1, ndpp.RandomOptions{Diag: 0.1})
	baskets := [][]int{{0}, {1, 2}, {}}
	gains := [][]float64{make([]float64, 5), make([]float64, 5), make([]float64, 5)}
	errs := make([]error, len(baskets))
	if err := m.ConditionalGainsBatch(baskets, gains, errs); err != nil {
		panic(err)
	}
	for b, g := range gains {
		fmt.Printf("%v %v %.3f\n", baskets[b], errs[b], g)
	}
	// Output:
	// [0] <nil> [0.000 0.716 0.127 2.591 0.393]
	// [1 2] <nil> [1.420 0.000 0.000 2.023 0.442]
	// [] <nil> [3.267 1.026 0.767 3.387 0.797]
}
