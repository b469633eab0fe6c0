package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestServeSlotPool: the pool is saturated from the moment its last free
// slot is taken until one is free again — a slot handed straight to a
// waiting request does not end it — waiters are served in order, and a
// waiter whose context is done never gets a slot.
func TestServeSlotPool(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	p := newSlotPool(2)
	p.now = clk.now
	check := func(busy, waiting int, sat time.Duration) {
		t.Helper()
		b, w, d := p.state()
		require.Equal(t, []any{busy, waiting, sat}, []any{b, w, d})
	}
	ctx := context.Background()
	require.NoError(t, p.acquire(ctx))
	clk.advance(time.Second)
	check(1, 0, 0)
	require.NoError(t, p.acquire(ctx))
	clk.advance(3 * time.Second)
	check(2, 0, 3*time.Second)

	// Two waiters, the second one cancelled; a third waits behind them.
	order := make(chan int, 3)
	var wg sync.WaitGroup
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, w, _ := p.state(); w != n; _, w, _ = p.state() {
			require.True(t, time.Now().Before(deadline), "waiting for %d waiters", n)
			time.Sleep(time.Millisecond)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	errs := make([]error, 3)
	for i, c := range []context.Context{ctx, gone, ctx} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.acquire(c)
			if errs[i] == nil {
				order <- i
			}
		}()
		waitFor(i + 1)
	}
	cancel()
	waitFor(2)
	clk.advance(time.Second)
	check(2, 2, 4*time.Second)
	p.release() // handed to waiter 0: still saturated
	require.Equal(t, 0, <-order)
	clk.advance(time.Second)
	check(2, 1, 5*time.Second)
	p.release() // handed to waiter 2, not to the cancelled 1
	require.Equal(t, 2, <-order)
	wg.Wait()
	require.ErrorIs(t, errs[1], context.Canceled)
	check(2, 0, 5*time.Second)
	p.release() // now a slot is free
	check(1, 0, 0)
	clk.advance(time.Second)
	require.NoError(t, p.acquire(ctx)) // full again: a new stretch starts
	clk.advance(time.Second)
	check(2, 0, time.Second)
	// A request whose context is done takes no free slot either.
	p.release()
	require.ErrorIs(t, p.acquire(gone), context.Canceled)
	check(1, 0, 0)
	p.release()
	check(0, 0, 0)
}
