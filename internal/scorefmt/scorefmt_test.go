package scorefmt

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// TestLines: log-likelihood lines are line<TAB>log det L_S − log det(I + L)
// and recommendation lines name the top items by token.
func TestLines(t *testing.T) {
	m := ndpp.Random(12, 3, 1, ndpp.RandomOptions{Diag: 0.1})
	bs := [][]int{{0, 1}, {2}, {3, 4, 5}}
	lines := []int{3, 7, 9}
	var gains [][]float64
	out, err := Lines(context.Background(), m, bs, lines, 0, false, &gains)
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, rows, 3)
	for i, r := range rows {
		f := strings.Split(r, "\t")
		require.Equal(t, strconv.Itoa(lines[i]), f[0])
		ld, _, err := m.LogDet(bs[i])
		require.NoError(t, err)
		v, err := strconv.ParseFloat(f[1], 64)
		require.NoError(t, err)
		require.InDelta(t, ld-m.LogNormalizer(), v, 1e-8*math.Max(1, math.Abs(v)))
	}
	out, err = Lines(context.Background(), m, bs, lines, 2, false, &gains)
	require.NoError(t, err)
	rows = strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, r := range rows {
		recs, err := m.Recommend(context.Background(), bs[i], 2, ndpp.RecommendOptions{})
		require.NoError(t, err)
		var toks []string
		for _, rec := range recs {
			toks = append(toks, m.Token(rec.Item))
		}
		require.Equal(t, strconv.Itoa(lines[i])+"\t"+strings.Join(toks, " "), r)
	}
}

// TestFileLines: every line of FileLines is the line of Lines with the file
// named first — a text column, a first JSON field — for log-likelihoods and
// recommendations; with no file it is Lines byte for byte.
func TestFileLines(t *testing.T) {
	m := ndpp.Random(12, 3, 2, ndpp.RandomOptions{Diag: 0.1})
	bs := [][]int{{0, 1}, {2}, {3, 4, 5}, {6}}
	lines := []int{1, 4, 5, 8}
	var gains [][]float64
	for _, topN := range []int{0, 3} {
		for _, asJSON := range []bool{false, true} {
			plain, err := Lines(context.Background(), m, bs, lines, topN, asJSON, &gains)
			require.NoError(t, err)
			same, err := FileLines(context.Background(), "", m, bs, lines, topN, asJSON, &gains)
			require.NoError(t, err)
			require.Equal(t, plain, same)
			named, err := FileLines(context.Background(), "dir/a \"b\".txt", m, bs, lines, topN, asJSON, &gains)
			require.NoError(t, err)
			want := strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n")
			got := strings.Split(strings.TrimSuffix(string(named), "\n"), "\n")
			require.Len(t, got, len(want))
			for i := range want {
				if asJSON {
					require.Equal(t, `{"file":"dir/a \"b\".txt",`+want[i][1:], got[i])
				} else {
					require.Equal(t, "dir/a \"b\".txt\t"+want[i], got[i])
				}
			}
		}
	}
}
