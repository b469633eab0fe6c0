package learn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// TestKZAheadSameBits runs every task of kzAhead that the worker has not
// claimed on the test's goroutine after the basket it was posted in (the
// helper's items are not that basket's, so this is what the worker
// computes while the learner learns from it), and checks that the
// parameters are those of a learner without tasks, bit for bit, with and
// without a diagonal.
func TestKZAheadSameBits(t *testing.T) {
	data := benchBaskets(400, 3000, 7)
	for _, lowRank := range []bool{false, true} {
		opt := OnlineOptions{D: 6, Seed: 3, LowRank: lowRank}
		plain, err := NewOnline(opt)
		require.NoError(t, err)
		ahead, err := NewOnline(opt)
		require.NoError(t, err)
		posted := 0
		for q, b := range data {
			require.NoError(t, plain.Observe(b))
			if q+1 < len(data) {
				ahead.next = data[q+1]
			}
			require.NoError(t, ahead.Observe(b))
			ahead.next = nil
			if a := ahead.ahead; a.posted {
				a.run(ahead.np) // unless the worker has claimed it
				// Run by the test or by the worker, it is not cancelled.
				require.NotEqual(t, uint64(kzCancelled), a.state.Load()&3)
				posted++
			}
		}
		plain.quiesce()
		ahead.quiesce()
		require.Greater(t, posted, len(data)/2, "tasks posted")
		if diff := cmp.Diff(plain.Params(), ahead.Params()); diff != "" {
			t.Fatalf("lowRank %v: with K zᵢ ahead (-without +with):\n%s", lowRank, diff)
		}
	}
}
