package eval

import (
	"os"
	"strconv"
	"testing"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// analysisSplit is the split of `ndpp-bench learn` (300 validation and
// 2,000 test baskets) of the basket file the environment variable dataVar
// names, for the analyses that run only when it is set (it skips t
// otherwise), with the seed seedVar gives (default 1). keys are the items'
// integer ids, the paper protocol's order (nil when a token is not one).
type analysisSplit struct {
	train, val, test [][]int
	n                int
	keys             []int64
	seed             uint64
}

func loadAnalysisSplit(t *testing.T, dataVar, seedVar string) analysisSplit {
	t.Helper()
	path := os.Getenv(dataVar)
	if path == "" {
		t.Skip(dataVar + " not set")
	}
	a := analysisSplit{seed: 1}
	if v := os.Getenv(seedVar); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", seedVar, err)
		}
		a.seed = s
	}
	voc, err := ndpp.NewVocab(nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := baskets.ReadFile(path, baskets.LineOptions{Vocab: voc, Grow: true, Tokens: baskets.AutoTokens})
	if err != nil {
		t.Fatal(err)
	}
	if a.train, a.val, a.test, err = baskets.HoldOutSlice(data, 300, 2000, a.seed); err != nil {
		t.Fatal(err)
	}
	a.n = voc.Len()
	for i := 0; i < a.n; i++ {
		k, err := strconv.ParseInt(voc.Token(i), 10, 64)
		if err != nil {
			a.keys = nil
			break
		}
		a.keys = append(a.keys, k)
	}
	return a
}
