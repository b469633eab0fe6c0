package ndpptest

import (
	"context"
	"sync"
)

// CancelAfter returns a context that is cancelled at the (n+1)-th call of
// its Err method: the first n calls return nil, every later one
// context.Canceled (and Done is closed from then on). It stops a
// computation at a chosen one of its checks, whatever the timing.
func CancelAfter(n int) context.Context {
	return &countdown{Context: context.Background(), left: n, done: make(chan struct{})}
}

type countdown struct {
	context.Context // Deadline and Value: none
	mu              sync.Mutex
	left            int // calls of Err left before cancellation; −1 once cancelled
	done            chan struct{}
}

func (c *countdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.left > 0:
		c.left--
		return nil
	case c.left == 0:
		c.left = -1
		close(c.done)
	}
	return context.Canceled
}

func (c *countdown) Done() <-chan struct{} { return c.done }
