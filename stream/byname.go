package stream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ndpp-go/ndpp/detcache"
)

// solverNames are the online solvers NewSolver builds, in the order the
// online-MAP paper presents them.
var solverNames = []string{NameStreamPartition, NameOnlineLSS, NameOnline2Neighbor, NameOnlineGreedy}

// SolverNames returns the names NewSolver accepts (a new slice), in the
// order the online-MAP paper presents the algorithms: NameStreamPartition,
// NameOnlineLSS, NameOnline2Neighbor, NameOnlineGreedy.
func SolverNames() []string { return append([]string(nil), solverNames...) }

// ErrUnknownSolver is wrapped by NewSolver's error for a name it does not
// know.
var ErrUnknownSolver = errors.New("stream: unknown solver")

// NewSolver returns the online solver called name (one of SolverNames) on
// oracle o with solution size k: NewStreamPartition for a stream of n items
// (n is used by Stream-Partition only), NewOnlineLSS, NewOnline2Neighbor or
// NewOnlineGreedy with opt. The constructor's error is returned as it is; an
// unknown name gives an error wrapping ErrUnknownSolver that lists the
// known ones. The solver owns o.
func NewSolver(name string, o detcache.Oracle, k, n int, opt Options) (Solver, error) {
	switch name {
	case NameStreamPartition:
		return NewStreamPartition(o, k, n, opt)
	case NameOnlineLSS:
		return NewOnlineLSS(o, k, opt)
	case NameOnline2Neighbor:
		return NewOnline2Neighbor(o, k, opt)
	case NameOnlineGreedy:
		return NewOnlineGreedy(o, k, opt)
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownSolver, name, strings.Join(solverNames, ", "))
}
