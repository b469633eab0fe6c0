// Package cmdenv reads the environment variables that ndpp's commands
// (ndpp-bench, ndpp-beam) take as the defaults of their flags: NDPP_BLAS
// for --backend and NDPP_MAX_MEMORY for --max-memory. Only commands import
// it: the library reads no environment, its backend changes only through
// blas.Use and its budgets are options of its calls.
package cmdenv

import (
	"fmt"
	"os"
	"strings"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// BLASVar names the BLAS backend a command uses when --backend is not
// given: gonum, openblas or auto.
const BLASVar = "NDPP_BLAS"

// MemoryVar is the memory budget a command uses when --max-memory is not
// given, as memlimit.Parse reads it (e.g. 8G).
const MemoryVar = "NDPP_MAX_MEMORY"

// Backend returns the backend named by BLASVar, or "" when it is unset or
// blank; checking the name is blas.Use's job (BackendError words its
// refusal).
func Backend() string {
	return strings.TrimSpace(os.Getenv(BLASVar))
}

// BackendError words blas.Use's refusal of the backend that BLASVar names.
func BackendError(name string, err error) error {
	return fmt.Errorf("blas: %s=%q: %s", BLASVar, name, strings.TrimPrefix(err.Error(), "blas: "))
}

// Budget returns the default budget of the command cmd (e.g.
// "ndpp-bench"): MemoryVar when it is set, else the Machine default (which
// MemoryVar or the command's --max-memory raises). A malformed MemoryVar is
// an error.
func Budget(cmd string) (memlimit.Budget, error) {
	if s, ok := os.LookupEnv(MemoryVar); ok && strings.TrimSpace(s) != "" {
		b, err := memlimit.Parse(s)
		if err != nil {
			return memlimit.Budget{}, fmt.Errorf("memlimit: %s=%q: %w", MemoryVar, s, err)
		}
		return memlimit.Budget{Bytes: b, Source: MemoryVar}, nil
	}
	b := memlimit.Machine()
	b.Raise = MemoryVar + " or " + cmd + " --max-memory raises it"
	return b, nil
}
