package baskets

import (
	"io"
	"sync"
)

// aheadBaskets is the number of baskets a read-ahead goroutine reads into
// one chunk.
const aheadBaskets = 256

// DefaultReadAhead is the number of chunks of baskets NewReadAhead reads
// ahead, and a Reader's ReadAhead option's usual value.
const DefaultReadAhead = 4

// pump runs fill on a goroutine of its own, ahead of its consumer: fill
// fills a chunk (new, or reused from the pool) and reports whether the
// stream has ended (the chunk then holds its error), after which the
// goroutine ends. Up to ahead filled chunks wait for the consumer, which
// takes them in order (get) and hands them back (put). It is the one
// read-ahead of the package: ReadAhead's and a Reader's (LineOptions and
// CSVOptions.ReadAhead).
type pump[C any] struct {
	out, free chan *C
	done      chan struct{}
	once      sync.Once
}

func startPump[C any](ahead int, fill func(c *C) (end bool)) *pump[C] {
	p := &pump[C]{out: make(chan *C, ahead), free: make(chan *C, ahead+2), done: make(chan struct{})}
	go func() {
		defer close(p.out)
		for {
			select {
			case <-p.done:
				return
			default:
			}
			var c *C
			select {
			case c = <-p.free:
			default:
				c = new(C)
			}
			end := fill(c)
			select {
			case p.out <- c:
			case <-p.done:
				return
			}
			if end {
				return
			}
		}
	}()
	return p
}

// get returns the next filled chunk, or nil once the goroutine has ended
// (after stop).
func (p *pump[C]) get() *C {
	c, ok := <-p.out
	if !ok {
		return nil
	}
	return c
}

// put hands a consumed chunk back to the pool.
func (p *pump[C]) put(c *C) {
	select {
	case p.free <- c:
	default:
	}
}

// stop ends the goroutine and returns once it has ended (a fill in
// progress finishes first). It is safe to call more than once.
func (p *pump[C]) stop() {
	p.once.Do(func() {
		close(p.done)
		for range p.out {
		}
	})
}

// Peeker is a Source that can show the basket its next call to Next will
// return, without consuming it, when it has that basket at hand (Peek
// returns nil when it has not; it never waits for the stream): a
// ReadAhead, a Reader that reads ahead, and SliceSource's source. An online
// learner fetches the next basket's state into the caches while it learns
// from the current one.
type Peeker interface {
	Source
	Peek() []int
}

// ReadAhead reads any Source ahead of its caller on a goroutine of its
// own, in chunks of 256 baskets (copied: a source may reuse the slice it
// returns), up to DefaultReadAhead chunks ahead, so that reading, parsing
// and whatever the source does per basket (a hold-out, counting) run on
// another core; Next returns the baskets in order, then the source's error
// (io.EOF at the end). A panic in the source's Next is raised again by
// ReadAhead's Next, on the caller's goroutine, after the baskets before it.
// The basket Next returns is valid until the next call to Next, so a
// ReadAhead is the last stage of a chain of sources (HoldOut keeps the
// baskets it holds out: it reads from the source itself). Whatever the
// source shares with its caller (a growing vocabulary, a HoldOut's
// validation baskets) must not be used until Next has returned an error or
// Close has returned. Call Close when stopping before the end. A ReadAhead
// is not safe for concurrent use.
type ReadAhead struct {
	p     *pump[copiedChunk]
	cur   *copiedChunk
	i     int // baskets of cur returned
	ended bool
}

// copiedChunk is consecutive baskets of a source, flattened, and the
// source's error after them (nil if it had none yet), or the value of a
// panic in its Next.
type copiedChunk struct {
	items, ends []int
	err         error
	panicked    any
}

// NewReadAhead starts reading src ahead. A nil src panics.
func NewReadAhead(src Source) *ReadAhead {
	if src == nil {
		panic("baskets: NewReadAhead of a nil Source")
	}
	fill := func(c *copiedChunk) bool {
		c.items, c.ends = c.items[:0], c.ends[:0]
		for len(c.ends) < aheadBaskets {
			b, p, err := nextRecover(src)
			if p != nil {
				c.panicked = p
				return true
			}
			if err != nil {
				c.err = err
				return true
			}
			c.items = append(c.items, b...)
			c.ends = append(c.ends, len(c.items))
		}
		return false
	}
	return &ReadAhead{p: startPump(DefaultReadAhead, fill)}
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
func (a *ReadAhead) Next() ([]int, error) {
	if a.ended {
		return nil, io.EOF
	}
	for a.cur == nil || a.i == len(a.cur.ends) {
		if a.cur != nil {
			if a.cur.panicked != nil {
				panic(a.cur.panicked)
			}
			if a.cur.err != nil {
				return nil, a.cur.err
			}
			a.p.put(a.cur)
		}
		if a.cur = a.p.get(); a.cur == nil {
			a.ended = true
			return nil, io.EOF // not reached: the last chunk carries the error
		}
		a.i = 0
	}
	lo := 0
	if a.i > 0 {
		lo = a.cur.ends[a.i-1]
	}
	hi := a.cur.ends[a.i]
	a.i++
	return a.cur.items[lo:hi:hi], nil
}

// Peek returns the basket Next will return if it is in the chunk at hand
// (valid until Next is called twice), else nil.
func (a *ReadAhead) Peek() []int {
	if a.ended || a.cur == nil || a.i == len(a.cur.ends) {
		return nil
	}
	lo := 0
	if a.i > 0 {
		lo = a.cur.ends[a.i-1]
	}
	return a.cur.items[lo:a.cur.ends[a.i]]
}

// Close ends the reading goroutine and returns when it has ended (it no
// longer uses the source; a read of the source in progress finishes
// first); Next then returns io.EOF. Close is safe to call more than once.
func (a *ReadAhead) Close() error {
	a.p.stop()
	a.ended, a.cur = true, nil
	return nil
}

// readChunk is consecutive baskets of a Reader reading ahead, as Next
// returns them (fresh slices), with the line and the Stats after each, and
// the decoder's error after them with the Stats then.
type readChunk struct {
	baskets  [][]int
	lines    []int
	stats    []Stats
	err      error
	endStats Stats
	panicked any
}

// fillAhead decodes up to aheadBaskets baskets into c (the read-ahead
// goroutine's fill).
func (r *Reader) fillAhead(c *readChunk) bool {
	clear(c.baskets)
	c.baskets, c.lines, c.stats = c.baskets[:0], c.lines[:0], c.stats[:0]
	for len(c.baskets) < aheadBaskets {
		b, p, err := r.decodeRecover()
		if p != nil {
			c.panicked = p
			return true
		}
		if err != nil {
			c.err, c.endStats = err, r.stats
			return true
		}
		c.baskets = append(c.baskets, b)
		c.lines = append(c.lines, r.last)
		c.stats = append(c.stats, r.stats)
	}
	return false
}

// decodeRecover calls r.decode and returns the value of a panic in it, if
// any.
func (r *Reader) decodeRecover() (b []int, panicked any, err error) {
	defer func() { panicked = recover() }()
	b, err = r.decode()
	return b, nil, err
}

// nextAhead is Next of a Reader reading ahead: the baskets the goroutine
// decoded, with their lines and counts.
func (r *Reader) nextAhead() ([]int, error) {
	if r.closed {
		return nil, r.err
	}
	if r.ahead == nil {
		r.ahead = startPump(r.aheadChunks, r.fillAhead)
	}
	for r.rc == nil || r.ri == len(r.rc.baskets) {
		if r.rc != nil {
			if r.rc.panicked != nil {
				panic(r.rc.panicked)
			}
			if r.rc.err != nil {
				r.given = r.rc.endStats
				return nil, r.rc.err
			}
			r.ahead.put(r.rc)
		}
		if r.rc, r.ri = r.ahead.get(), 0; r.rc == nil {
			return nil, io.EOF // not reached: the last chunk carries the error
		}
	}
	b := r.rc.baskets[r.ri]
	r.givenLine, r.given = r.rc.lines[r.ri], r.rc.stats[r.ri]
	r.ri++
	return b, nil
}

// Peek returns, for a Reader reading ahead (LineOptions.ReadAhead,
// CSVOptions.ReadAhead), the basket Next will return if it has been read
// already, else nil; nil without read-ahead.
func (r *Reader) Peek() []int {
	if r.closed || r.rc == nil || r.ri == len(r.rc.baskets) {
		return nil
	}
	return r.rc.baskets[r.ri]
}
