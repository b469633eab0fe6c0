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
// without a diagonal, and that the tasks computed K zᵢ.
func TestKZAheadSameBits(t *testing.T) {
	data := benchBaskets(400, 3000, 7)
	for _, lowRank := range []bool{false, true} {
		opt := OnlineOptions{D: 6, Seed: 3, LowRank: lowRank}
		plain, err := NewOnline(opt)
		require.NoError(t, err)
		ahead, err := NewOnline(opt)
		require.NoError(t, err)
		computed := 0
		for q, b := range data {
			require.NoError(t, plain.Observe(b))
			if q+1 < len(data) {
				ahead.next = data[q+1]
			}
			require.NoError(t, ahead.Observe(b))
			ahead.next = nil
			if a := ahead.ahead; a.posted {
				s := a.state.Load()
				a.run(ahead.np)
				if s&3 == kzPosted && a.state.Load() == s|kzDone {
					computed++
				}
			}
		}
		plain.quiesce()
		ahead.quiesce()
		require.Greater(t, computed, len(data)/2, "tasks run")
		if diff := cmp.Diff(plain.Params(), ahead.Params()); diff != "" {
			t.Fatalf("lowRank %v: with K zᵢ ahead (-without +with):\n%s", lowRank, diff)
		}
	}
}
