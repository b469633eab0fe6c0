package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// fastIgnoresDiag reports whether detcache.Fast leaves a model's diagonal
// out of its values (as it did before diagonal support reached the
// oracle): its value of a singleton is compared with ndpp's LogDet.
func fastIgnoresDiag() bool {
	m := ndpp.Random(4, 2, 1, ndpp.RandomOptions{Diag: 1})
	o, err := detcache.NewFast(m, 1)
	if err != nil {
		return true
	}
	c := o.NewCand()
	o.Prepare(c, 0)
	if err := o.Add(c); err != nil {
		return true
	}
	ld, _, _ := m.LogDet([]int{0})
	return math.Abs(o.Value().Log-ld) > 1e-9
}

// inferRows runs infer with --json and returns its rows by algorithm.
func inferRows(t *testing.T, args ...string) map[string]inferResult {
	t.Helper()
	code, out, errs := runInferArgs(t, append(args, "--json", "--quiet")...)
	require.Zero(t, code, errs)
	var res struct {
		Results []inferResult `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	rows := map[string]inferResult{}
	for _, r := range res.Results {
		rows[r.Algo] = r
	}
	return rows
}

// TestInferLocalSearch: local search starts from the offline greedy's
// solution and never ends below it; both oracles give the same solution.
func TestInferLocalSearch(t *testing.T) {
	for _, seed := range []string{"1", "2"} {
		args := []string{"--synthetic", "--n", "500", "--d", "5", "--k", "6", "--seed", seed, "--algos", "offline-greedy,local-search"}
		fast := inferRows(t, args...)
		naive := inferRows(t, append(args, "--oracle", "naive")...)
		g, ls := fast["offline-greedy"], fast["local-search"]
		require.NotNil(t, g.LogValue)
		require.NotNil(t, ls.LogValue)
		require.GreaterOrEqual(t, *ls.LogValue, *g.LogValue-1e-9, "seed %s", seed)
		require.Len(t, ls.Solution, 6)
		require.Equal(t, ls.Solution, naive["local-search"].Solution, "seed %s: fast and naive oracles", seed)
		require.Equal(t, ls.DetEvals, naive["local-search"].DetEvals, "seed %s: evaluations", seed)
	}
}

// TestInferPolish: --polish adds a row per online algorithm whose value is
// at least the algorithm's.
func TestInferPolish(t *testing.T) {
	rows := inferRows(t, "--synthetic", "--n", "400", "--d", "4", "--k", "5", "--seed", "3", "--polish", "--ls-pool", "8", "--ls-eps", "0.01")
	require.Len(t, rows, 2*len(inferAlgos)-1)
	for _, a := range inferAlgos {
		p, ok := rows[a+polishSuffix]
		if a == "offline-greedy" {
			require.False(t, ok, "offline-greedy is not polished")
			continue
		}
		require.True(t, ok, "no %s row", a+polishSuffix)
		if r := rows[a]; r.LogValue != nil {
			require.NotNil(t, p.LogValue, a)
			require.GreaterOrEqual(t, *p.LogValue, *r.LogValue-1e-9, a)
		}
	}
	code, out, errs := runInferArgs(t, "--synthetic", "--n", "300", "--d", "4", "--k", "4", "--algos", "online-greedy", "--polish")
	require.Zero(t, code, errs)
	require.Contains(t, out, "online-greedy+polish")
	require.Contains(t, errs, "online-greedy+polish: log f")
}

func TestInferLocalSearchUsage(t *testing.T) {
	syn := []string{"--synthetic", "--n", "50", "--d", "3"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(syn, "--ls-eps", "0"), "--ls-eps"},
		{append(syn, "--ls-eps", "NaN"), "--ls-eps"},
		{append(syn, "--ls-pool", "-2"), "--ls-pool"},
	} {
		code, _, errs := runInferArgs(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, errs)
		require.Contains(t, errs, c.want)
		require.Equal(t, 1, strings.Count(errs, "\n"))
	}
}
