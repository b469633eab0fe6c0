package learn_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/learn"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// pairBaskets returns a small synthetic data set: items come in pairs {2g, 2g+1}
// that are bought together.
func pairBaskets(count int) [][]int {
	out := make([][]int, count)
	for i := range out {
		g := (i * 7) % 10
		if i%3 == 0 {
			out[i] = []int{2 * g}
		} else {
			out[i] = []int{2 * g, 2*g + 1}
		}
	}
	return out
}

// One pass of the online learner over a stream of baskets (here in memory;
// a *baskets.Reader streams a file), then the paper's metrics.
func ExampleTrainOnline() {
	data := pairBaskets(3000)
	train, test := data[:2500], data[2500:]
	res, err := learn.TrainOnline(context.Background(), baskets.SliceSource(train), learn.OnlineOptions{D: 4, N: 20, Seed: 1}, learn.OnlineRun{})
	if err != nil {
		panic(err)
	}
	m, err := eval.Evaluate(context.Background(), res.Model, test, eval.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d baskets in one pass; MPR above 65: %v\n", res.Baskets, m.MPRMicro > 65)
	// Output: 2500 baskets in one pass; MPR above 65: true
}

// The offline baseline: minibatch Adam on the full objective with
// validation-based stopping.
func ExampleTrainOffline() {
	data := pairBaskets(3000)
	train, val, test := data[:2400], data[2400:2600], data[2600:]
	res, err := learn.TrainOffline(context.Background(), train, val, 20, learn.OfflineOptions{D: 4, Seed: 1, LR: 0.01, Batch: 100})
	if err != nil {
		panic(err)
	}
	m, err := eval.Evaluate(context.Background(), res.Model, test, eval.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	// The simplest models that could win: popularity for ranking, the
	// independent-items model for likelihood.
	base, err := eval.IndependentBaseline(context.Background(), train, test, 20, eval.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("MPR above popularity: %v; LL above independent items: %v\n", m.MPRMicro > base.MPRMicro, m.TestLLEps > base.TestLLEps)
	// Output: MPR above popularity: true; LL above independent items: true
}

// The rank objective (ndpp-bench learn --objective rank): a strong
// next-item term, and the model selected on validation ranking among the
// checks whose likelihood stays above the independent-items model's.
func ExampleTrainOffline_rank() {
	data := pairBaskets(3000)
	train, val, test := data[:2400], data[2400:2600], data[2600:]
	ctx := context.Background()
	mpr := map[learn.Objective]float64{}
	var by learn.Selection
	for _, obj := range []learn.Objective{learn.ObjectiveLikelihood, learn.ObjectiveRank} {
		res, err := learn.TrainOffline(ctx, train, val, 20, learn.OfflineOptions{D: 4, Seed: 1, Objective: obj})
		if err != nil {
			panic(err)
		}
		m, err := eval.Evaluate(ctx, res.Model, test, eval.Options{Seed: 1})
		if err != nil {
			panic(err)
		}
		mpr[obj], by = m.MPR, res.SelectedBy
	}
	fmt.Printf("selected by %v; ranks above the likelihood objective's model: %v\n", by, mpr[learn.ObjectiveRank] > mpr[learn.ObjectiveLikelihood])
	// Output: selected by ranking; ranks above the likelihood objective's model: true
}

// Checkpoint and resume: the resumed learner ends with the same parameters
// as one that never stopped.
func ExampleLoadOnline() {
	data := pairBaskets(1000)
	opt := learn.OnlineOptions{D: 3, N: 20, Seed: 2}
	whole, _ := learn.TrainOnline(context.Background(), baskets.SliceSource(data), opt, learn.OnlineRun{})

	o, _ := learn.NewOnline(opt)
	_, _ = o.Run(context.Background(), baskets.SliceSource(data), learn.OnlineRun{MaxBaskets: 400})
	var ck bytesBuffer
	_ = o.Save(&ck)
	r, _ := learn.LoadOnline(&ck)
	src := baskets.SliceSource(data)
	_ = r.SkipConsumed(context.Background(), src) // an error if src does not start with the baskets consumed
	rest, _ := r.Run(context.Background(), src, learn.OnlineRun{})
	fmt.Println(equal(whole.Params.V, rest.Params.V))
	// Output: true
}

type bytesBuffer = bytes.Buffer

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
