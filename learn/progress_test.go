package learn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProgressCallbacks: the online learner reports every ProgressEvery
// baskets and at the end; the offline learner after every iteration.
func TestProgressCallbacks(t *testing.T) {
	baskets := make([][]int, 2*ProgressEvery+17)
	for i := range baskets {
		baskets[i] = []int{i % 40, (i*7 + 3) % 40}
		if baskets[i][0] == baskets[i][1] {
			baskets[i] = baskets[i][:1]
		}
	}
	var seen []int
	res, err := TrainOnline(context.Background(), sliceSource(baskets), OnlineOptions{D: 4, N: 40, Seed: 1},
		OnlineRun{Progress: func(b int) { seen = append(seen, b) }})
	require.NoError(t, err)
	require.Equal(t, []int{ProgressEvery, 2 * ProgressEvery, len(baskets)}, seen)
	require.Equal(t, len(baskets), res.Baskets)

	var iters []int
	maxSeen := 0
	off, err := TrainOffline(context.Background(), baskets[:1500], baskets[1500:1600], 40, OfflineOptions{D: 4, Seed: 1, Batch: 100, MaxEpochs: 3,
		Progress: func(it, maxIt int) { iters = append(iters, it); maxSeen = maxIt }})
	require.NoError(t, err)
	require.Equal(t, off.Iterations, len(iters))
	for i, it := range iters {
		require.Equal(t, i+1, it)
	}
	require.Equal(t, 3*1500/100, maxSeen)
}
