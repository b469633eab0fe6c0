package serve

import (
	"bytes"
	"context"
	"runtime"
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
		b, w, full, d := p.state()
		require.Equal(t, []any{busy, waiting, sat}, []any{b, w, d})
		require.Equal(t, sat > 0, full)
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
	// waitFor waits until n requests wait, queued in the semaphore (so
	// that the order of the waiters started one after another is known).
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, w, _, _ := p.state(); w != n || queued() != n; _, w, _, _ = p.state() {
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

// queued counts the goroutines blocked in a semaphore's queue (in the
// select of semaphore.Weighted.Acquire, which they reach once queued).
func queued() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		header, frames, _ := bytes.Cut(g, []byte("\n"))
		if bytes.Contains(header, []byte("[select")) && bytes.HasPrefix(frames, []byte("golang.org/x/sync/semaphore.(*Weighted).Acquire")) {
			count++
		}
	}
	return count
}

// BenchmarkSlotPool: a slot taken and given back by parallel requests,
// 4 slots.
func BenchmarkSlotPool(b *testing.B) {
	p := newSlotPool(4)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := p.acquire(ctx); err != nil {
				b.Fatal(err)
			}
			p.release()
		}
	})
}
