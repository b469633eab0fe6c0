package stream

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
)

// TestNilSolverAndSource: a nil solver or item source is an error naming
// it, not a nil dereference.
func TestNilSolverAndSource(t *testing.T) {
	_, err := Run(context.Background(), nil, []int{0, 1}, RunOptions{})
	require.ErrorContains(t, err, "stream: nil solver")
	_, err = RunItems(context.Background(), nil, nil, RunOptions{})
	require.ErrorContains(t, err, "stream: nil solver")
	m := instance(1)
	o, err := detcache.NewFast(m, 1)
	require.NoError(t, err)
	s, err := NewOnlineGreedy(o, 1, Options{})
	require.NoError(t, err)
	_, err = RunItems(context.Background(), s, nil, RunOptions{})
	require.ErrorContains(t, err, "stream: nil item source")
	_, _, err = RunItemsAll(context.Background(), []Solver{s, nil}, nil, RunOptions{})
	require.ErrorContains(t, err, "solvers[1]")
}
