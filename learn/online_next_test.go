package learn

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlineNextTermIsTheOfflineTerm: the online learner's next-item
// gradient, computed over a small Params of the basket's and the
// candidates' rows, is the offline term's on the whole catalogue for the
// same held-out item and candidates: for the basket's rows (V, B, θ) and
// C, with and without a diagonal, with B = V, with candidates drawn and
// with every other item a candidate.
func TestOnlineNextTermIsTheOfflineTerm(t *testing.T) {
	for _, tc := range []struct {
		diag, shared bool
		negs         int
	}{{true, false, 4}, {false, false, 4}, {true, true, 4}, {true, false, 100}} {
		t.Run(fmt.Sprintf("diag=%v/shared=%v/negatives=%d", tc.diag, tc.shared, tc.negs), func(t *testing.T) {
			o, err := NewOnline(OnlineOptions{D: 4, Seed: 7, LowRank: !tc.diag, Shared: tc.shared, NextWeight: 0.3, NextNegatives: tc.negs,
				Init: InitOptions{Scale: 0.4, CScale: 0.5, Share: -1}})
			require.NoError(t, err)
			for _, s := range plantedBaskets(30, 80, 4) {
				require.NoError(t, o.Observe(s))
			}
			basket := []int{3, 11, 7, 20}
			o.rows = append(o.rows[:0], basket...)
			o.beginBasket(basket)
			clear(o.pendC)
			o.nextTerm(basket)
			require.True(t, o.nx.set)
			k, d := len(basket), o.p.Dim
			// The offline term on the whole catalogue at the same state.
			o.refreshTheta()
			p := o.p
			var pp nextPrep
			pp.prepare(p, o.c, o.opt.Eps, nil)
			acc := newAccum(p.N, d)
			var w nextWork
			_, ok := w.term(&pp, p, basket, k-1, o.nx.rows, o.opt.NextBeta, acc, o.opt.NextWeight*float64(k))
			require.True(t, ok)
			g := NewGrad(p)
			acc.finish(p, o.c, g, false)
			for q, i := range basket {
				require.InDeltaSlice(t, g.V[i*d:(i+1)*d], o.nx.gv[q*d:(q+1)*d], 1e-12, "V of item %d", i)
				if g.B != nil {
					require.InDeltaSlice(t, g.B[i*d:(i+1)*d], o.nx.gb[q*d:(q+1)*d], 1e-12, "B of item %d", i)
				}
				if g.T != nil {
					require.InDelta(t, g.T[i], o.nx.gt[q], 1e-12, "θ of item %d", i)
				}
			}
			require.InDeltaSlice(t, acc.gc, o.pendC, 1e-12, "C")
			if tc.negs >= p.N {
				require.Len(t, o.nx.rows, p.N-k)
			} else {
				require.Len(t, o.nx.rows, tc.negs)
			}
		})
	}
}

// TestOnlineNextTermResumes: with the next-item term, a learner saved
// mid-pass and resumed ends with the parameters of one never stopped, and
// the term's weight is recorded in the checkpoint.
func TestOnlineNextTermResumes(t *testing.T) {
	bs := plantedBaskets(40, 300, 9)
	opt := OnlineOptions{D: 4, Seed: 3, Schedule: Schedule{FactorEvery: 10, Lag: 5}, NextWeight: 0.02}
	whole := learnerAt(t, opt, bs, int64(len(bs)))
	require.Equal(t, 0.02, whole.Options().NextWeight)
	half := learnerAt(t, opt, bs, 137)
	o, err := LoadOnline(bytes.NewReader(saveBytes(t, half)))
	require.NoError(t, err)
	require.Equal(t, 0.02, o.Options().NextWeight)
	for _, s := range bs[137:] {
		require.NoError(t, o.Observe(s))
	}
	require.Equal(t, whole.Params(), o.Params())
	off := learnerAt(t, OnlineOptions{D: 4, Seed: 3, Schedule: Schedule{FactorEvery: 10, Lag: 5}}, bs, int64(len(bs)))
	require.NotEqual(t, whole.Params(), off.Params(), "the term changed nothing")
}
