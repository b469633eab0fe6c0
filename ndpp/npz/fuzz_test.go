package npz

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// FuzzRead: arbitrary bytes never panic, and whatever loads survives a
// write/read round trip unchanged.
func FuzzRead(f *testing.F) {
	if data, err := os.ReadFile(numpyFixtureFile); err == nil {
		f.Add(data)
	}
	voc, err := ndpp.NewVocab([]string{"a", "b", "c"})
	require.NoError(f, err)
	m, err := ndpp.NewFromRows(3, 2, []float64{1, 2, 3, 4, 5, 6}, nil, []float64{0, 1, -1, 0}, ndpp.WithIDs([]int64{7, 8, 9}), ndpp.WithVocab(voc))
	require.NoError(f, err)
	f.Add(encode(f, m))
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeBytes(data)
		if err != nil {
			return
		}
		again, err := decodeBytes(encode(t, m))
		require.NoError(t, err, "re-reading a written model")
		requireSameModel(t, m, again, "round trip")
	})
}
