package baskets

import (
	"io"
	"sync"
)

// ReadAhead reads a Source ahead of its caller on a goroutine of its own,
// in chunks of 256 baskets (copied: a source may reuse the slice it
// returns), up to 4 chunks ahead; Next returns them in order, then the
// source's error (io.EOF at the end). A panic in the source's Next is
// raised again by ReadAhead's Next, on the caller's goroutine. The basket
// Next returns is valid until the next call to Next. Close stops the
// goroutine (when the caller stops before the end). A ReadAhead is not
// safe for concurrent use.
type ReadAhead struct {
	out   chan *basketChunk
	free  chan *basketChunk
	done  chan struct{}
	once  sync.Once
	cur   *basketChunk
	i     int // baskets of cur returned
	ended bool
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
	aheadBaskets = 256
	aheadChunks  = 4
)

// NewReadAhead starts reading src ahead. A nil src panics.
func NewReadAhead(src Source) *ReadAhead {
	if src == nil {
		panic("baskets: NewReadAhead of a nil Source")
	}
	pf := &ReadAhead{out: make(chan *basketChunk, aheadChunks), free: make(chan *basketChunk, aheadChunks+2),
		done: make(chan struct{})}
	go pf.read(src)
	return pf
}

// read fills chunks from src until it returns an error or Close is called.
// A panic in src.Next is handed to Next, which panics with it on the
// caller's goroutine, as src.Next called there would.
func (pf *ReadAhead) read(src Source) {
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
		for len(c.ends) < aheadBaskets {
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
func nextRecover(src Source) (b []int, panicked any, err error) {
	defer func() { panicked = recover() }()
	b, err = src.Next()
	return b, nil, err
}

// Next returns the next basket (valid until the next call) or the source's
// error, io.EOF after the last basket and after Close.
func (pf *ReadAhead) Next() ([]int, error) {
	if pf.ended {
		return nil, io.EOF
	}
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

// Peek returns the basket Next will return if it is in the chunk at hand
// (valid until Next is called twice), else nil; it does not wait for the
// source. A learner fetches that basket's state while it learns from the
// current one.
func (pf *ReadAhead) Peek() []int {
	if pf.ended || pf.cur == nil || pf.i == len(pf.cur.ends) {
		return nil
	}
	lo := 0
	if pf.i > 0 {
		lo = pf.cur.ends[pf.i-1]
	}
	return pf.cur.items[lo:pf.cur.ends[pf.i]]
}

// Close ends the reading goroutine and returns when it has ended (it no
// longer uses the source); Next then returns io.EOF. A read of the source
// in progress finishes first. Close is safe to call more than once.
func (pf *ReadAhead) Close() error {
	pf.once.Do(func() {
		close(pf.done)
		for range pf.out {
		}
	})
	pf.ended, pf.cur = true, nil
	return nil
}
