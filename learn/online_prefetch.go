package learn

import (
	"io"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// prefetch reads a baskets.Source ahead on a goroutine of its own, in
// chunks of prefetchBaskets baskets (copied: a source may reuse the slice it
// returns), up to prefetchChunks chunks ahead; next returns them in order,
// then the source's error (io.EOF at the end).
type prefetch struct {
	out  chan *basketChunk
	free chan *basketChunk
	done chan struct{}
	cur  *basketChunk
	i    int // baskets of cur returned
}

// basketChunk is consecutive baskets of a source, flattened, and the
// source's error after them (nil if it had none yet), or the value of a
// panic in its Next.
type basketChunk struct {
	items, ends []int
	err         error
	panicked    any
}

const (
	prefetchBaskets = 256
	prefetchChunks  = 4
)

func newPrefetch(src baskets.Source) *prefetch {
	pf := &prefetch{out: make(chan *basketChunk, prefetchChunks), free: make(chan *basketChunk, prefetchChunks+2),
		done: make(chan struct{})}
	go pf.read(src)
	return pf
}

// read fills chunks from src until it returns an error or stop is called.
// A panic in src.Next is handed to next, which panics with it on the
// learner's goroutine, as src.Next called there would.
func (pf *prefetch) read(src baskets.Source) {
	defer close(pf.out)
	for {
		select {
		case <-pf.done:
			return
		default:
		}
		var c *basketChunk
		select {
		case c = <-pf.free:
			c.items, c.ends = c.items[:0], c.ends[:0]
		default:
			c = &basketChunk{}
		}
		for len(c.ends) < prefetchBaskets {
			b, p, err := nextRecover(src)
			if p != nil {
				c.panicked = p
				break
			}
			if err != nil {
				c.err = err
				break
			}
			c.items = append(c.items, b...)
			c.ends = append(c.ends, len(c.items))
		}
		select {
		case pf.out <- c:
		case <-pf.done:
			return
		}
		if c.err != nil || c.panicked != nil {
			return
		}
	}
}

// nextRecover calls src.Next and returns the value of a panic in it, if
// any.
func nextRecover(src baskets.Source) (b []int, panicked any, err error) {
	defer func() { panicked = recover() }()
	b, err = src.Next()
	return b, nil, err
}

// next returns the next basket (valid until the next call) or the source's
// error.
func (pf *prefetch) next() ([]int, error) {
	for pf.cur == nil || pf.i == len(pf.cur.ends) {
		if pf.cur != nil {
			if pf.cur.panicked != nil {
				panic(pf.cur.panicked)
			}
			if pf.cur.err != nil {
				return nil, pf.cur.err
			}
			select {
			case pf.free <- pf.cur:
			default:
			}
		}
		c, ok := <-pf.out
		if !ok {
			return nil, io.EOF // not reached: the last chunk carries the error
		}
		pf.cur, pf.i = c, 0
	}
	lo := 0
	if pf.i > 0 {
		lo = pf.cur.ends[pf.i-1]
	}
	hi := pf.cur.ends[pf.i]
	pf.i++
	return pf.cur.items[lo:hi:hi], nil
}

// peek returns the basket next would return if it is in the chunk at
// hand (valid until next is called twice), else nil.
func (pf *prefetch) peek() []int {
	if pf.cur == nil || pf.i == len(pf.cur.ends) {
		return nil
	}
	lo := 0
	if pf.i > 0 {
		lo = pf.cur.ends[pf.i-1]
	}
	return pf.cur.items[lo:pf.cur.ends[pf.i]]
}

// stop ends the reading goroutine and returns when it has ended (it no
// longer uses the source).
func (pf *prefetch) stop() {
	close(pf.done)
	for range pf.out {
	}
}
