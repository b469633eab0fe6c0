package learn

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainOnlineHugeItemIDTakesOneRow: an item id of 10⁹ takes one row of
// the learner, not 10⁹ (which would need gigabytes).
func TestTrainOnlineHugeItemIDTakesOneRow(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := TrainOnline(context.Background(), sliceSource([][]int{{3, 1_000_000_000}, {3}}), OnlineOptions{D: 4}, OnlineRun{})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	require.Equal(t, 2, res.Model.N())
	require.ElementsMatch(t, []int64{3, 1_000_000_000}, res.Model.IDs())
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))
}

// TestNilSourcePanicsWithItsName: a nil source is a programmer error
// reported with the package and the argument, not a nil dereference.
func TestNilSourcePanicsWithItsName(t *testing.T) {
	require.PanicsWithValue(t, "learn: Online.Run with a nil baskets.Source", func() {
		_, _ = TrainOnline(context.Background(), nil, OnlineOptions{D: 2}, OnlineRun{})
	})
	require.PanicsWithValue(t, "learn: SkipBaskets with a nil baskets.Source", func() { _ = SkipBaskets(nil, 1) })
}
