package npz

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

// TestLoadKernel: the kernel of a model file without its items — C, d,
// B = V (also for a saved shared model, whose B equals V) and the
// diagonal's presence — as Load would give it.
func TestLoadKernel(t *testing.T) {
	dir := t.TempDir()
	for i, opt := range []ndpp.RandomOptions{{}, {Shared: true}, {Diag: 1}, {Shared: true, Diag: 0.1}} {
		m := ndpp.Random(30, 4, uint64(i), opt)
		path := filepath.Join(dir, "m.npz")
		require.NoError(t, Save(path, m))
		k, err := LoadKernel(path)
		require.NoError(t, err)
		_, _, _, c := m.Rows()
		require.Equal(t, ndpp.Kernel{D: 4, C: c, Shared: m.Shared(), Diag: m.HasDiag()}, k, "%+v", opt)
	}
	_, err := LoadKernel(filepath.Join(dir, "missing.npz"))
	require.Error(t, err)
	_, err = LoadKernel(dir)
	require.ErrorContains(t, err, "is a directory")
}
