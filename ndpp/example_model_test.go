package ndpp_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// A model from V and C with B = V (pass nil for B), as in Gartrell et al.'s
// experiments; C is made skew-symmetric with ndpp.Skew.
func ExampleNew() {
	V := mat.NewDense(2, 3, []float64{
		1, 0, 1,
		0, 1, 1,
	}) // d = 2, n = 3: item i is column i
	C := ndpp.Skew(mat.NewDense(2, 2, []float64{0, 0.5, 0, 0}))
	m, err := ndpp.New(V, nil, C)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.N(), m.D(), m.Shared())
	fmt.Printf("L_01 = %.2f, L_10 = %.2f\n", m.Entry(0, 1), m.Entry(1, 0))
	// Output:
	// 3 2 true
	// L_01 = 0.50, L_10 = -0.50
}

// Scoring a set: log det L_S and the log-likelihood under the model.
func ExampleModel_LogDet() {
	m, err := npz.Load("../testdata/small-model.npz")
	if err != nil {
		panic(err)
	}
	ld, sign, err := m.LogDet([]int{3, 17, 42})
	if err != nil {
		panic(err)
	}
	fmt.Printf("log det = %.4f, sign %v, log-likelihood = %.4f\n", ld, sign, ld-m.LogNormalizer())

	// Nine items with d = 4: more than 2d, so the determinant is exactly zero.
	_, sign, _ = m.LogDet([]int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	fmt.Println("sign of a set larger than 2d:", sign)

	_, _, err = m.LogDet([]int{1, 1})
	fmt.Println(err)
	// Output:
	// log det = -1.8119, sign 1, log-likelihood = -21.9627
	// sign of a set larger than 2d: 0
	// ndpp: duplicate item 1 at positions 0 and 1
}

// Batch scoring: many baskets in parallel with a shared read-only model.
func ExampleModel_LogDets() {
	m := ndpp.Random(1000, 8, 1, ndpp.RandomOptions{})
	baskets := [][]int{{1, 2}, {3, 4, 5}, {6}}
	lds, err := m.LogDets(baskets, 4)
	if err != nil {
		panic(err)
	}
	for i, ld := range lds {
		direct, _, _ := m.LogDet(baskets[i])
		fmt.Println(ld == direct)
	}
	// Output:
	// true
	// true
	// true
}

// Next-item recommendation: the item with the largest conditional gain
// det L_{Y+j} / det L_Y given the items Y already chosen.
func ExampleModel_ConditionalGains() {
	m, err := npz.Load("../testdata/small-model.npz")
	if err != nil {
		panic(err)
	}
	gains := make([]float64, m.N())
	if err := m.ConditionalGains([]int{1, 2, 3}, gains); err != nil {
		panic(err)
	}
	best := 0
	for j, g := range gains {
		if g > gains[best] {
			best = j
		}
	}
	fmt.Printf("recommend item %s (gain %.3f)\n", m.Token(best), gains[best])
	// Output:
	// recommend item 57 (gain 4.470)
}
