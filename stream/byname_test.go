package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// TestNewSolverByName: every name of SolverNames builds the solver of that
// name, which runs exactly as the one its own constructor builds; an unknown
// name is an error wrapping ErrUnknownSolver, and a constructor's error
// comes back unchanged.
func TestNewSolverByName(t *testing.T) {
	const n, d, k = 60, 4, 5
	m := ndpp.Random(n, d, 11, ndpp.RandomOptions{})
	opt := Options{Alpha: 1.05, StashCap: 7}
	direct := map[string]func(o detcache.Oracle) (Solver, error){
		NameStreamPartition: func(o detcache.Oracle) (Solver, error) { return NewStreamPartition(o, k, n, opt) },
		NameOnlineLSS:       func(o detcache.Oracle) (Solver, error) { return NewOnlineLSS(o, k, opt) },
		NameOnline2Neighbor: func(o detcache.Oracle) (Solver, error) { return NewOnline2Neighbor(o, k, opt) },
		NameOnlineGreedy:    func(o detcache.Oracle) (Solver, error) { return NewOnlineGreedy(o, k, opt) },
	}
	names := SolverNames()
	require.Equal(t, []string{NameStreamPartition, NameOnlineLSS, NameOnline2Neighbor, NameOnlineGreedy}, names)
	names[0] = "changed"
	require.Equal(t, NameStreamPartition, SolverNames()[0], "SolverNames returns a copy")
	for _, name := range SolverNames() {
		o, err := detcache.NewFast(m, k)
		require.NoError(t, err)
		s, err := NewSolver(name, o, k, n, opt)
		require.NoError(t, err, name)
		require.Equal(t, name, s.Name())
		o2, err := detcache.NewFast(m, k)
		require.NoError(t, err)
		want, err := direct[name](o2)
		require.NoError(t, err)
		got, err := Run(context.Background(), s, RandomOrder(n, 3), RunOptions{})
		require.NoError(t, err)
		exp, err := Run(context.Background(), want, RandomOrder(n, 3), RunOptions{})
		require.NoError(t, err)
		require.Equal(t, exp.Solution, got.Solution, name)
		require.Equal(t, exp.Value, got.Value, name)
		require.Equal(t, exp.Evals, got.Evals, name)
	}
	o, err := detcache.NewFast(m, k)
	require.NoError(t, err)
	_, err = NewSolver("online-lsss", o, k, n, opt)
	require.True(t, errors.Is(err, ErrUnknownSolver), "%v", err)
	require.ErrorContains(t, err, `"online-lsss"`)
	require.ErrorContains(t, err, NameOnline2Neighbor)
	for _, name := range []string{NameOfflineGreedy, NameLocalSearch, NameExact, ""} {
		_, err = NewSolver(name, o, k, n, opt)
		require.ErrorIs(t, err, ErrUnknownSolver, name)
	}
	// The constructor's own error, unchanged.
	_, want := NewStreamPartition(o, k, 0, opt)
	require.Error(t, want)
	_, err = NewSolver(NameStreamPartition, o, k, 0, opt)
	require.Equal(t, want.Error(), err.Error())
}
