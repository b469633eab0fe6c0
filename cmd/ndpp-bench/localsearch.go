package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/stream"
)

// polishSuffix names the rows of online algorithms' solutions improved by
// local search (infer --polish).
const polishSuffix = "+polish"

// lsFlags are infer's local-search flags.
type lsFlags struct {
	polish bool
	eps    float64
	pool   int
}

func (l *lsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.polish, "polish", false, "improve each online algorithm's solution by local search (rows named ALGO"+polishSuffix+", which count the search alone)")
	fs.Float64Var(&l.eps, "ls-eps", stream.DefaultLocalSearchEps, "local search: apply a move when it multiplies f(S) by more than 1 + ε")
	fs.IntVar(&l.pool, "ls-pool", 0, fmt.Sprintf("local search: pair swaps among this many items outside S (0 = %d·k; -1 = every item)", stream.DefaultPoolPerItem))
}

func (l *lsFlags) check() error {
	if !(l.eps > 0) || math.IsInf(l.eps, 0) {
		return usagef("--ls-eps must be a finite number > 0 (got %v)", l.eps)
	}
	if l.pool < -1 {
		return usagef("--ls-pool must be ≥ -1 (got %d)", l.pool)
	}
	return nil
}

// localSearch runs stream.LocalSearch from start on an oracle of the given
// kind (the naive oracle sends every value through itself) and names the
// result.
func localSearch(ctx context.Context, kind string, m *ndpp.Model, k int, start []int, l lsFlags, name string) (stream.LocalSearchResult, error) {
	o, err := newOracle(kind, m, k)
	if err != nil {
		return stream.LocalSearchResult{}, usagef("%v", err)
	}
	res, err := stream.LocalSearch(ctx, o, k, start, stream.LocalSearchOptions{Eps: l.eps, Pool: l.pool, OracleOnly: kind == "naive"})
	if err != nil {
		return stream.LocalSearchResult{}, fmt.Errorf("%s: %w", name, err)
	}
	res.Algo = name
	return res, nil
}

// logLocalSearch writes one line about a local search: its start, its gain
// and its work.
func logLocalSearch(w io.Writer, res stream.LocalSearchResult, startSeconds float64) {
	gain := "f(start) = 0"
	if !res.Start.Zero && !res.Value.Zero {
		gain = fmt.Sprintf("log f %.4f → %.4f (%+.4f)", res.Start.Log, res.Value.Log, res.Value.Log-res.Start.Log)
	}
	fmt.Fprintf(w, "%s: %s; %d passes, %d swaps (%d pairs), %d pair rounds, %.3fs (start %.3fs)\n",
		res.Algo, gain, res.Passes, res.Swaps, res.PairSwaps, res.PairRounds, res.Seconds, startSeconds)
}
