package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/blas"
)

// TestVersion: `version` and `--version` print the same lines: the module
// version, the Go version and the BLAS backends compiled in.
func TestVersion(t *testing.T) {
	code, out, errs := runCmd(t, "", "version")
	require.Equal(t, 0, code, errs)
	require.True(t, strings.HasPrefix(out, "ndpp-bench "), out)
	require.Contains(t, out, "go "+strings.TrimPrefix(runtime.Version(), "go")+" ")
	require.Contains(t, out, "BLAS backends compiled in: "+strings.Join(blas.Available(), ", ")+"\n")
	code, out2, errs := runCmd(t, "", "--version")
	require.Equal(t, 0, code, errs)
	require.Equal(t, out, out2)
	code, _, errs = runCmd(t, "", "version", "--json")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--json does not apply to version")
}
