package serve

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// slotPool bounds the requests computed at once (Limits.MaxInflight) with
// a weighted semaphore: a request waits for a free slot in order of
// arrival and stops waiting when its context is done (the client went
// away, or the server is closing its connection); it then never takes a
// slot, and a slot granted as its context ended goes to the next one.
//
// The pool also keeps what readiness and the metrics need: the slots
// taken, the requests waiting, and how long every slot has been
// continuously busy. The pool is saturated from the moment its last free
// slot is taken until a slot is released with no request waiting (or the
// last waiter gives up); a slot handed from a finishing request straight
// to a waiting one does not end it, so under a queue of requests the pool
// stays saturated however quickly they finish.
type slotPool struct {
	sem  *semaphore.Weighted
	size int

	mu        sync.Mutex
	busy      int       // slots taken
	waiting   int       // requests waiting for a slot
	fullSince time.Time // when the last free slot was taken; zero while one is free
	now       func() time.Time
}

func newSlotPool(size int) *slotPool {
	return &slotPool{sem: semaphore.NewWeighted(int64(size)), size: size, now: time.Now}
}

// acquire takes a slot, waiting for one if none is free. It returns
// ctx.Err() without a slot if ctx is done first (or already); the caller
// must release a slot it got.
func (p *slotPool) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.sem.TryAcquire(1) {
		p.mu.Lock()
		p.took()
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	p.waiting++
	p.mu.Unlock()
	err := p.sem.Acquire(ctx, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting--
	if err != nil {
		if p.busy < p.size && p.waiting == 0 {
			p.fullSince = time.Time{}
		}
		return err
	}
	p.took()
	return nil
}

// took counts a slot taken (p.mu held).
func (p *slotPool) took() {
	p.busy++
	if p.busy == p.size && p.fullSince.IsZero() {
		p.fullSince = p.now()
	}
}

// release gives a slot back: to the request that has waited longest, or
// free.
func (p *slotPool) release() {
	p.mu.Lock()
	if p.busy == 0 {
		p.mu.Unlock()
		panic("serve: slotPool release without acquire")
	}
	p.busy--
	if p.waiting == 0 {
		p.fullSince = time.Time{}
	}
	p.mu.Unlock()
	p.sem.Release(1)
}

// state returns the slots taken, the requests waiting for one, whether
// every slot has been continuously busy (in the sense above) and for how
// long (0 while one is free).
func (p *slotPool) state() (busy, waiting int, full bool, saturatedFor time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fullSince.IsZero() {
		full, saturatedFor = true, p.now().Sub(p.fullSince)
	}
	return p.busy, p.waiting, full, saturatedFor
}
