package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/scorefmt"
	"github.com/ndpp-go/ndpp/ndpp/npz"
)

const smallModel = "../../testdata/small-model.npz"

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin)}, args)
	return code, out.String(), errb.String()
}

// TestScoreLogLikelihoodInOrder scores more baskets than one chunk on several
// workers and compares every line with a direct LogDet, in input order.
func TestScoreLogLikelihoodInOrder(t *testing.T) {
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	var in strings.Builder
	var baskets [][]int
	for i := 0; i < 3*scoreChunkSize+17; i++ {
		b := []int{i % m.N(), (i*7 + 1) % m.N(), (i*13 + 5) % m.N()}
		if b[1] == b[0] || b[2] == b[0] || b[2] == b[1] {
			b = b[:1]
		}
		baskets = append(baskets, b)
		for j, x := range b {
			if j > 0 {
				in.WriteByte(' ')
			}
			in.WriteString(strconv.Itoa(x))
		}
		in.WriteByte('\n')
	}
	code, out, errs := runCmd(t, in.String(), "score", "--model", smallModel, "--threads", "3", "--quiet")
	require.Equal(t, 0, code, errs)
	sc := bufio.NewScanner(strings.NewReader(out))
	norm := m.LogNormalizer()
	i := 0
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		require.Len(t, f, 2)
		require.Equal(t, strconv.Itoa(i+1), f[0])
		got, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err)
		ld, _, err := m.LogDet(baskets[i])
		require.NoError(t, err)
		require.InDelta(t, ld-norm, got, 1e-8*math.Max(1, math.Abs(got)))
		i++
	}
	require.Equal(t, len(baskets), i)
}

func TestScoreRecommendMatchesBruteForce(t *testing.T) {
	m, err := npz.Load(smallModel)
	require.NoError(t, err)
	queries := [][]int{{1, 2, 3}, {5}, {10, 20}}
	var in strings.Builder
	for _, q := range queries {
		in.WriteString(fmt.Sprintf("%d", q[0]))
		for _, x := range q[1:] {
			in.WriteString(fmt.Sprintf(",%d", x))
		}
		in.WriteString("\n")
	}
	code, out, errs := runCmd(t, in.String(), "score", "--model", smallModel, "--recommend", "4", "--json")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, len(queries))
	for qi, q := range queries {
		var r scorefmt.Rec
		require.NoError(t, json.Unmarshal([]byte(lines[qi]), &r))
		require.Equal(t, qi+1, r.Line)
		// Brute force: the gain of every candidate from determinant ratios.
		base, _, _ := m.LogDet(q)
		type cand struct {
			j    int
			gain float64
		}
		var all []cand
		for j := 0; j < m.N(); j++ {
			if contains(q, j) {
				continue
			}
			ld, _, err := m.LogDet(append(append([]int(nil), q...), j))
			require.NoError(t, err)
			all = append(all, cand{j, math.Exp(ld - base)})
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].gain > all[b].gain })
		require.Len(t, r.Items, 4)
		for k := 0; k < 4; k++ {
			require.Equal(t, strconv.Itoa(all[k].j), r.Items[k], "query %d rank %d", qi, k)
			require.InDelta(t, all[k].gain, r.Gains[k], 1e-8*math.Max(1, all[k].gain))
		}
	}
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func TestScoreErrors(t *testing.T) {
	code, _, errs := runCmd(t, "", "score")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--model is required")
	code, _, errs = runCmd(t, "", "score", "--model", smallModel, "--recommend", "1000")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "more than the model's")
	code, _, errs = runCmd(t, "1 2\n3 oops\n", "score", "--model", smallModel)
	require.Equal(t, 1, code)
	require.Contains(t, errs, ":2:")
	require.Contains(t, errs, "oops")
	code, _, errs = runCmd(t, "1 2\n", "score", "--model", filepath.Join(t.TempDir(), "missing.npz"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "missing.npz")
	bad := filepath.Join(t.TempDir(), "bad.npz")
	require.NoError(t, os.WriteFile(bad, []byte("not a zip"), 0o644))
	code, _, _ = runCmd(t, "1\n", "score", "--model", bad)
	require.Equal(t, 1, code)
	code, _, _ = runCmd(t, "", "score", "--bogus")
	require.Equal(t, 2, code)
	code, _, _ = runCmd(t, "", "score", "--help")
	require.Equal(t, 0, code)
}

// TestHelpAndFlagErrors: --help prints the summary, an example and every
// flag (exit 0); a bad flag is one line on stderr (exit 2), for every command.
func TestHelpAndFlagErrors(t *testing.T) {
	for _, name := range commandNames() {
		code, _, errs := runCmd(t, "", name, "--help")
		require.Equal(t, 0, code, name)
		require.Contains(t, errs, "Example:", name)
		// The global flags a command honours are in its help; any other is
		// refused with a usage error that names it.
		for _, g := range globalNames {
			listed := strings.Contains(errs, "\n  -"+g.name+" ") || strings.Contains(errs, "\n  -"+g.name+"\n")
			if commands[name].globals&g.flag != 0 {
				require.True(t, listed, "%s --help does not list --%s", name, g.name)
				continue
			}
			require.False(t, listed, "%s --help lists --%s", name, g.name)
			arg := "--" + g.name
			if g.name == "threads" || g.name == "backend" || g.name == "max-memory" {
				arg += "=1"
			}
			code, _, gerrs := runCmd(t, "", name, arg)
			require.Equal(t, 2, code, "%s %s", name, arg)
			require.Contains(t, gerrs, "--"+g.name+" does not apply to "+name, name)
			require.Equal(t, 1, strings.Count(gerrs, "\n"), "%s: %q", name, gerrs)
		}
		code, _, errs = runCmd(t, "", name, "--no-such-flag")
		require.Equal(t, 2, code, name)
		require.Equal(t, 1, strings.Count(errs, "\n"), "%s: %q", name, errs)
	}
	code, _, errs := runCmd(t, "", "frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "unknown command")
	code, _, _ = runCmd(t, "")
	require.Equal(t, 2, code)
}

// TestScoreCSVInput: transaction CSV input gives the same scores as the
// equivalent line-format baskets.
func TestScoreCSVInput(t *testing.T) {
	csvIn := "InvoiceNo,StockCode,Qty\nA,1,5\nA,2,1\nB,3,1\nC,4,2\nC,5,1\nC,6,1\n"
	code, out, errs := runCmd(t, csvIn, "score", "--model", smallModel, "--format", "csv", "--basket-col", "InvoiceNo", "--item-col", "StockCode", "--quiet")
	require.Equal(t, 0, code, errs)
	code, want, errs := runCmd(t, "1 2\n3\n4 5 6\n", "score", "--model", smallModel, "--quiet")
	require.Equal(t, 0, code, errs)
	values := func(s string) []string {
		var v []string
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			v = append(v, strings.Split(line, "\t")[1])
		}
		return v
	}
	require.Equal(t, values(want), values(out))
	code, _, errs = runCmd(t, csvIn, "score", "--model", smallModel, "--format", "csv")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--basket-col")
}
