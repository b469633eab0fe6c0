package sample

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// TestNewCancelled: New stops with the context's error, wrapped, before it
// starts and between the chunks of the Gram products.
func TestNewCancelled(t *testing.T) {
	m := ndpp.Random(3*gramChunk, 3, 1, ndpp.RandomOptions{Diag: 0.01})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(ctx, m, Options{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = New(ndpptest.CancelAfter(2), m, Options{}) // during the third chunk's check
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "sample: new sampler")
	_, err = New(ndpptest.CancelAfter(3), m, Options{})
	require.NoError(t, err)
}

// TestSampleCancelled: a sample whose context is done before it starts, or
// at a chosen block (one item at a time and in blocks, with given items),
// stops with the context's error and no items; the sampler then draws the
// samples a fresh one draws from the same random numbers.
func TestSampleCancelled(t *testing.T) {
	m := ndpp.Random(300, 4, 2, ndpp.RandomOptions{Diag: 0.05})
	for _, block := range []int{1, 16} {
		s, err := New(context.Background(), m, Options{Block: block})
		require.NoError(t, err)
		g, err := s.Given(context.Background(), []int{5, 40})
		require.NoError(t, err)
		for _, smp := range []*Sampler{s, g} {
			ref := smp.Clone()
			want := draw(t, ref, rand.New(rand.NewPCG(3, 3)))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			buf := make([]int, 0, m.N())
			for _, ctx := range []context.Context{ctx, ndpptest.CancelAfter(0), ndpptest.CancelAfter(7), ndpptest.CancelAfter(100 / block)} {
				y, err := smp.SampleInto(ctx, rand.New(rand.NewPCG(9, 9)), buf)
				require.ErrorIs(t, err, context.Canceled, "block %d", block)
				require.Empty(t, y)
				require.Equal(t, want, draw(t, smp, rand.New(rand.NewPCG(3, 3))), "block %d: a sample after a stopped one", block)
			}
			_, err := smp.Sample(ndpptest.CancelAfter(m.N()), rand.New(rand.NewPCG(9, 9)))
			require.NoError(t, err, "block %d: more checks than blocks", block)
		}
	}
}

// TestSampleDeadline: a sample of a large model stops soon after its
// deadline.
func TestSampleDeadline(t *testing.T) {
	m := ndpp.Random(100000, 20, 3, ndpp.RandomOptions{Diag: 1e-3})
	s, err := New(context.Background(), m, Options{Block: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Sample(ctx, rand.New(rand.NewPCG(1, 1))) // O(n·r²): far longer than the deadline
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

// TestGivenCancelled: conditioning on many items stops with the context's
// error, wrapped, before it starts and between groups of given items; the
// sampler it was called on is unchanged: it draws the samples of a fresh
// sampler, and conditioning it again gives the state, probability and
// samples of an uninterrupted call, bit for bit.
func TestGivenCancelled(t *testing.T) {
	m := ndpp.Random(300, 4, 5, ndpp.RandomOptions{Diag: 0.05})
	var given []int
	for i := 0; i < m.N(); i += 3 {
		given = append(given, i)
	}
	checks := (len(given) + givenCheckEvery - 1) / givenCheckEvery
	fresh, err := New(context.Background(), m, Options{})
	require.NoError(t, err)
	want, err := fresh.Given(context.Background(), given)
	require.NoError(t, err)

	s, err := New(context.Background(), m, Options{})
	require.NoError(t, err)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ctx := range []context.Context{done, ndpptest.CancelAfter(0), ndpptest.CancelAfter(checks / 2), ndpptest.CancelAfter(checks - 1)} {
		g, err := s.Given(ctx, given)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorContains(t, err, "sample: given items")
		require.Nil(t, g)
		require.Empty(t, s.GivenItems())
		require.Equal(t, draw(t, fresh, rand.New(rand.NewPCG(4, 4))), draw(t, s, rand.New(rand.NewPCG(4, 4))))
	}
	got, err := s.Given(ndpptest.CancelAfter(checks), given) // one check per group: enough
	require.NoError(t, err)
	require.Equal(t, want.GivenItems(), got.GivenItems())
	require.Equal(t, math.Float64bits(want.GivenLogProb()), math.Float64bits(got.GivenLogProb()))
	for i := range want.x0 {
		require.Equal(t, math.Float64bits(want.x0[i]), math.Float64bits(got.x0[i]), "X[%d]", i)
	}
	require.Equal(t, draw(t, want, rand.New(rand.NewPCG(6, 6))), draw(t, got, rand.New(rand.NewPCG(6, 6))))
}

// TestKSampleCancelled: a k-NDPP sample whose context is done before it
// starts or during a try stops with the context's error and no items; the
// sampler then draws what a fresh one draws.
func TestKSampleCancelled(t *testing.T) {
	m := ndpp.Random(300, 4, 2, ndpp.RandomOptions{Diag: 0.05})
	ks, err := NewK(context.Background(), m, 6, KOptions{Given: []int{5}})
	require.NoError(t, err)
	want, err := ks.Clone().Sample(context.Background(), rand.New(rand.NewPCG(3, 3)))
	require.NoError(t, err)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ctx := range []context.Context{done, ndpptest.CancelAfter(0), ndpptest.CancelAfter(7)} {
		y, err := ks.Sample(ctx, rand.New(rand.NewPCG(9, 9)))
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, y)
		got, err := ks.Sample(context.Background(), rand.New(rand.NewPCG(3, 3)))
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = NewK(done, m, 6, KOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = ks.ExpectedTries(done)
	require.ErrorIs(t, err, context.Canceled)
}
