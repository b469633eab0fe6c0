package main

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/outfile"
)

// checkImages asserts that every path is a decodable PNG of a sensible size
// or an SVG document.
func checkImages(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(data))
			require.NoError(t, err, p)
			b := img.Bounds()
			require.True(t, b.Dx() >= 300 && b.Dy() >= 200, "%s is %v", p, b)
		case ".svg":
			require.True(t, strings.Contains(string(data), "<svg"), p)
		default:
			t.Fatalf("unexpected figure %s", p)
		}
	}
}

func TestDrawFiguresFromCSV(t *testing.T) {
	dir := t.TempDir()
	var rows []trajRow
	for _, algo := range []string{"online-lss", "online-greedy"} {
		for i := int64(1); i <= 50; i++ {
			v := math.Inf(-1)
			if i > 8 {
				v = -20 + float64(i)/5
			}
			rows = append(rows, trajRow{algo: algo, items: i, logValue: v, size: int(min(i, 8)), evals: 8 * i, swaps: i / 10})
		}
	}
	require.NoError(t, writeTrajectories(outfile.Write, dir, rows))
	require.NoError(t, writeGreedy(outfile.Write, dir, -9.5))
	require.NoError(t, writeNLL(outfile.Write, dir, []nllRow{{"online", 0.01, 100, 12}, {"online", 0.1, 1000, 10}, {"offline", 0.5, 800, 11}, {"offline", 2, 8000, 9.6}}))
	paths, err := drawFigures(context.Background(), dir)
	require.NoError(t, err)
	require.Len(t, paths, 8) // 4 figures × (PNG, SVG)
	checkImages(t, paths)

	// Redrawn through the command.
	var out, errb bytes.Buffer
	code := run(&env{stdout: &out, stderr: &errb}, []string{"figures", "--in", dir})
	require.Equal(t, 0, code, errb.String())
	require.Equal(t, 8, strings.Count(out.String(), "\n"))

	// A learning curve written with the column's former name "nll" (the
	// same figure) is still drawn.
	csv, err := os.ReadFile(filepath.Join(dir, nllCSV))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(csv), "mode,seconds,baskets,nll_eps\n"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, nllCSV), []byte(strings.Replace(string(csv), "nll_eps", "nll", 1)), 0o644))
	paths2, err := drawFigures(context.Background(), dir)
	require.NoError(t, err)
	require.Equal(t, paths, paths2)

	// No CSV files: a clear error, exit 1.
	errb.Reset()
	code = run(&env{stdout: &out, stderr: &errb}, []string{"figures", "--in", t.TempDir()})
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "no demo CSV files")
	// A corrupt CSV.
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, trajectoryCSV), []byte("algo,items\nx,1\n"), 0o644))
	_, err = drawFigures(context.Background(), bad)
	require.Error(t, err)
}
