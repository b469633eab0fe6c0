package npz

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// testdata/npyio-headers.txt holds the NPY headers that the writer of
// earlier versions (github.com/sbinet/npyio v0.6.0) produced for float64
// matrices, int64 and uint8 vectors of many shapes, one per line: dtype,
// shape, Go-quoted header bytes. The writer must reproduce them exactly.
func TestNPYHeaderMatchesEarlierWriter(t *testing.T) {
	f, err := os.Open("testdata/npyio-headers.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	residues := map[int]bool{}
	for sc.Scan() {
		lines++
		fields := strings.SplitN(sc.Text(), " ", 4)
		if fields[0] != "<f8" {
			// Vectors: "descr n quoted".
			fields = append(fields[:2], strings.Join(fields[2:], " "))
		}
		descr, quoted := fields[0], fields[len(fields)-1]
		var shape []int
		for _, s := range fields[1 : len(fields)-1] {
			x, err := strconv.Atoi(s)
			require.NoError(t, err, sc.Text())
			shape = append(shape, x)
		}
		want, err := strconv.Unquote(quoted)
		require.NoError(t, err, sc.Text())
		got := appendNPYHeader(nil, descr, shape)
		require.Equal(t, want, string(got), "header of %s %v", descr, shape)
		residues[len(got)%16] = true
		// Our reader reads it back (the data is missing unless the
		// array is empty).
		count := 1
		for _, s := range shape {
			count *= s
		}
		a, err := readNPY(bytes.NewReader(got), uint64(len(got)), nil)
		if count == 0 {
			require.NoError(t, err, "header of %s %v", descr, shape)
			require.Equal(t, shape, a.shape)
		} else {
			require.ErrorContains(t, err, "truncated data", "header of %s %v without data", descr, shape)
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 188, lines, "fixture lines")
	require.Greater(t, len(residues), 1, "headers of one length class only")
}

// Files written by earlier versions (through npyio) are written again byte
// for byte: the small model, a model with ids and an awkward vocabulary,
// and a one-item shared model whose only token is empty (a vocab array of
// shape (0,)).
func TestWriteMatchesEarlierFiles(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{""})
	require.NoError(t, err)
	one := ndpp.Random(1, 2, 8, ndpp.RandomOptions{Shared: true})
	v, _, _, c := one.Rows()
	oneMeta, err := ndpp.NewFromRows(1, 2, v, nil, c, ndpp.WithIDs([]int64{-5}), ndpp.WithVocab(voc))
	require.NoError(t, err)
	for path, m := range map[string]*ndpp.Model{
		smallModelFixture:                 smallModel(),
		"testdata/ids-vocab.npz":          withMeta(t, ndpp.Random(30, 4, 7, ndpp.RandomOptions{})),
		"testdata/shared-empty-token.npz": oneMeta,
	} {
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		got := encode(t, m)
		require.True(t, bytes.Equal(want, got), "%s: written bytes differ (%d bytes, want %d)", path, len(got), len(want))
		back, err := Load(path)
		require.NoError(t, err)
		requireSameModel(t, m, back, path)
	}
}
