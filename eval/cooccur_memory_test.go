package eval

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// TestCooccurrenceMemoryBudget: the pair budget's memory, CooccurrenceMemory,
// and the item counts are checked against the budget given, before they
// are allocated.
func TestCooccurrenceMemoryBudget(t *testing.T) {
	require.Equal(t, int64(10*CooccurBytesPerPair), CooccurrenceMemory(10))
	require.Less(t, CooccurrenceMemory(10), CooccurrenceMemory(11))
	require.Equal(t, int64(-1), CooccurrenceMemory(1<<62))
	var me *memlimit.Error
	_, err := NewCooccurrence(10, 10*CooccurBytesPerPair-1)
	require.ErrorAs(t, err, &me)
	require.Contains(t, err.Error(), "co-occurrence counts of 10 pairs")
	c, err := NewCooccurrence(10, 10*CooccurBytesPerPair)
	require.NoError(t, err)
	require.NoError(t, c.Add([]int{1, 2}))
	err = c.Add([]int{1, 10 * CooccurBytesPerPair})
	require.ErrorAs(t, err, &me)
	require.Contains(t, err.Error(), "co-occurrence counts of 1001 items")
	_, err = CooccurrenceBaseline(context.Background(), [][]int{{0, 1}}, [][]int{{0, 1}}, 2, Options{MaxMemory: 1})
	require.ErrorAs(t, err, &me)
}
