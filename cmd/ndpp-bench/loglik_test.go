package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/eval"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

// TestLogLikelihoodOneConvention: score, /v1/score, eval's test_ll and
// Model.LogLikelihood give the same log P(S) = log det L_S − log det(L + I)
// on the same baskets, and eval names the learners' ε figure test_ll_eps
// (eval.LogLikelihoodEps's value).
func TestLogLikelihoodOneConvention(t *testing.T) {
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	baskets := [][]int{{3, 17, 42}, {1, 2}, {5, 9, 11, 30}, {7}, {40, 0, 12}}
	var file strings.Builder
	var body []string
	for _, b := range baskets {
		var toks []string
		for _, x := range b {
			toks = append(toks, strconv.Itoa(x))
		}
		file.WriteString(strings.Join(toks, " ") + "\n")
		body = append(body, "["+strings.Join(toks, ",")+"]")
	}
	want, err := m.LogLikelihood(baskets)
	require.NoError(t, err)
	tol := 1e-9 * math.Max(1, math.Abs(want))

	// score: one line per basket.
	code, out, errs := runCmd(t, file.String(), "score", "--model", smallModel, "--quiet")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, len(baskets))
	sum := 0.0
	for _, line := range lines {
		v, err := strconv.ParseFloat(strings.Split(line, "\t")[1], 64)
		require.NoError(t, err)
		sum += v
	}
	require.InDelta(t, want, sum/float64(len(baskets)), tol, "score")

	// /v1/score.
	url := testServer(t, smallModel)
	var res scoreResponse
	status, raw := post(t, url+"/v1/score", `{"baskets": [`+strings.Join(body, ",")+`]}`, &res)
	require.Equal(t, http.StatusOK, status, raw)
	sum = 0
	for _, v := range res.LogLikelihoods {
		require.NotNil(t, v)
		sum += *v
	}
	require.InDelta(t, want, sum/float64(len(baskets)), tol, "/v1/score")

	// eval: test_ll is the same figure, test_ll_eps the learners'.
	test := filepath.Join(t.TempDir(), "test.txt")
	require.NoError(t, os.WriteFile(test, []byte(file.String()), 0o644))
	code, out, errs = runCmd(t, "", "eval", "--model", smallModel, "--test", test, "--json", "--quiet")
	require.Equal(t, 0, code, errs)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.InDelta(t, want, r["test_ll"].(float64), tol, "eval test_ll")
	wantEps, err := eval.LogLikelihoodEps(context.Background(), m, baskets, 0)
	require.NoError(t, err)
	require.InDelta(t, wantEps, r["test_ll_eps"].(float64), tol, "eval test_ll_eps")
	require.Equal(t, eval.DefaultEps, r["eps"].(float64))
	require.NotEqual(t, want, wantEps) // two figures, two names

	// The table names both.
	code, out, errs = runCmd(t, "", "eval", "--model", smallModel, "--test", test, "--quiet")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "test log-likelihood ")
	require.Contains(t, out, "test log-likelihood, ε = 1e-05 (objective)")
}
