package serve

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// slotPool bounds the requests computed at once (--max-inflight). A
// request waits for a free slot in order of arrival and stops waiting when
// its context is done (the client went away, or the server is closing its
// connection): it then never takes a slot. A slot released while requests
// wait goes straight to the one that has waited longest.
//
// The pool is saturated from the moment its last free slot is taken until
// a slot is free again; a slot handed from a finishing request straight to
// a waiting one is never free, so under a queue of requests the pool stays
// saturated however quickly they finish. saturatedFor is the time since
// every slot has been continuously busy in this sense.
type slotPool struct {
	mu        sync.Mutex
	size      int
	busy      int       // slots taken; waiters is empty unless busy == size
	waiters   list.List // of chan struct{}, closed when the slot is handed over
	fullSince time.Time // when the last free slot was taken; zero while one is free
	now       func() time.Time
}

func newSlotPool(size int) *slotPool {
	return &slotPool{size: size, now: time.Now}
}

// acquire takes a slot, waiting for one if none is free. It returns
// ctx.Err() without a slot if ctx is done first (or already); the caller
// must release a slot it got.
func (p *slotPool) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	if p.busy < p.size {
		p.busy++
		if p.busy == p.size {
			p.fullSince = p.now()
		}
		p.mu.Unlock()
		return nil
	}
	granted := make(chan struct{})
	el := p.waiters.PushBack(granted)
	p.mu.Unlock()
	select {
	case <-granted:
		if err := ctx.Err(); err != nil { // both were ready: do not compute for a request that is gone
			p.release()
			return err
		}
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		select {
		case <-granted: // handed over meanwhile: pass it on
			p.mu.Unlock()
			p.release()
		default:
			p.waiters.Remove(el)
			p.mu.Unlock()
		}
		return ctx.Err()
	}
}

// release gives a slot back: to the request that has waited longest, or
// free.
func (p *slotPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if front := p.waiters.Front(); front != nil {
		close(p.waiters.Remove(front).(chan struct{}))
		return
	}
	if p.busy == 0 {
		panic("slotPool: release without acquire")
	}
	p.busy--
	p.fullSince = time.Time{}
}

// state returns the slots taken, the requests waiting for one, and how
// long every slot has been continuously busy (0 while one is free).
func (p *slotPool) state() (busy, waiting int, saturatedFor time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fullSince.IsZero() {
		saturatedFor = p.now().Sub(p.fullSince)
	}
	return p.busy, p.waiters.Len(), saturatedFor
}
