package learn

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainOnlineHugeItemIDTakesOneRow: an item id of 10⁹ takes one row of
// the learner, not 10⁹ (which would need gigabytes).
func TestTrainOnlineHugeItemIDTakesOneRow(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := TrainOnline(SliceSource([][]int{{3, 1_000_000_000}, {3}}), OnlineOptions{D: 4}, OnlineRun{})
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	require.Equal(t, 2, res.Model.N())
	require.ElementsMatch(t, []int64{3, 1_000_000_000}, res.Model.IDs())
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20))
}
