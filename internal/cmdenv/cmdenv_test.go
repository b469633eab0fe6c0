package cmdenv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

func TestBudget(t *testing.T) {
	m := memlimit.Machine()
	t.Setenv(MemoryVar, "")
	b, err := Budget("ndpp-bench")
	require.NoError(t, err)
	require.Equal(t, m.Bytes, b.Bytes)
	require.Equal(t, MemoryVar+" or ndpp-bench --max-memory raises it", b.Raise)

	t.Setenv(MemoryVar, "3G")
	b, err = Budget("ndpp-bench")
	require.NoError(t, err)
	require.Equal(t, memlimit.Budget{Bytes: 3 << 30, Source: MemoryVar}, b)

	t.Setenv(MemoryVar, "lots")
	_, err = Budget("ndpp-bench")
	require.ErrorContains(t, err, `NDPP_MAX_MEMORY="lots"`)
}

func TestBackend(t *testing.T) {
	t.Setenv(BLASVar, " openblas ")
	require.Equal(t, "openblas", Backend())
	t.Setenv(BLASVar, "")
	require.Equal(t, "", Backend())
	err := BackendError("bogus", errors.New(`blas: unknown backend "bogus" (want gonum, openblas or auto)`))
	require.EqualError(t, err, `blas: NDPP_BLAS="bogus": unknown backend "bogus" (want gonum, openblas or auto)`)
}

// TestLibraryReadsNoEnvironment checks that only the commands (cmd/,
// beam/cmd/) and this package read environment variables: the library's
// behaviour is set through its API alone.
func TestLibraryReadsNoEnvironment(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := []string{"cmd", filepath.Join("beam", "cmd"), filepath.Join("internal", "cmdenv"), "testdata"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			for _, a := range allowed {
				if rel == a {
					return filepath.SkipDir
				}
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, call := range []string{"os.Getenv(", "os.LookupEnv(", "os.Environ("} {
			if strings.Contains(string(src), call) {
				t.Errorf("%s calls %s: library code reads no environment (commands pass settings through the API)", rel, call)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
