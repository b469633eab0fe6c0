package stream

import (
	"context"
	"fmt"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Block scoring. Between accepted changes the arriving items of the
// local-search solvers (and, within a partition, of Stream-Partition) are
// scored against the same S, so they are handed to the oracle in blocks of
// up to blockSize items (detcache.Oracle.ScoreBlock: one pass of
// matrix–matrix products). The oracle then proves, from the identities and
// error bounds of its one-item path, that an item's values stay below the
// value it would have to beat; such an item cannot change the solution and
// is skipped, its evaluations counted as the oracle would have counted
// them. Every other item goes through Observe exactly as one at a time, and
// after an accepted change the rest of the block is scored again against
// the new S. So decisions, values and counters are those of observing one
// item at a time.

// blockSize is the number of arriving items scored at once (one more
// column holds the previous item for Online-2-neighbor's pairs).
const blockSize = 256

// ObserveBatch processes items in order with the same results as calling
// Observe on each, scoring blocks of arriving items with the oracle's block
// scoring (see the package documentation). On an error (a *BatchError),
// the items before the failing one have been processed. Once ctx is done
// it stops between two items (or rolls back an item whose
// Online-2-neighbor stash search it stops; see Online2Neighbor) with a
// *BatchError wrapping ctx.Err(); the solver stays usable.
func (l *local) ObserveBatch(ctx context.Context, items []int) error {
	if l.m == nil && len(items) > 0 {
		return &BatchError{Index: 0, Err: errVectors}
	}
	return l.observeBatch(ctx, items, nil)
}

// ObserveItems is ObserveBatch for items given by their vectors (blocks are
// filled from items as they come): the same results as calling
// ObserveItem on each.
func (l *local) ObserveItems(ctx context.Context, items []ndpp.Item) error {
	return l.observeBatch(ctx, nil, items)
}

// one observes item i of a batch: ids[i] by index (model-backed) or
// items[i].
func (l *local) one(ctx context.Context, ids []int, items []ndpp.Item, i int) error {
	if ids != nil {
		return l.observeID(ctx, ids[i])
	}
	return l.observe(ctx, items[i])
}

// observeBatch is ObserveBatch (ids, for a model-backed solver) and
// ObserveItems (items): one of them is nil. ctx is checked before every
// item that goes through Observe and before every block (an item the block
// scoring skips costs far less than one Observe).
func (l *local) observeBatch(ctx context.Context, ids []int, items []ndpp.Item) error {
	n := max(len(ids), len(items))
	if l.direct {
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return &BatchError{Index: i, Err: err}
			}
			if err := l.one(ctx, ids, items, i); err != nil {
				return &BatchError{Index: i, Err: err}
			}
		}
		return nil
	}
	if l.blk == nil {
		l.initBlock()
	}
	k := l.k
	npairs := int64(k * (k - 1) / 2)
	for start := 0; start < n; {
		if err := ctx.Err(); err != nil {
			return &BatchError{Index: start, Err: err}
		}
		fv := l.o.Value()
		if l.o.Len() < k || fv.Zero {
			if err := l.one(ctx, ids, items, start); err != nil {
				return &BatchError{Index: start, Err: err}
			}
			start++
			continue
		}
		end := min(start+blockSize, n)
		if ids != nil {
			end = start + l.validIDs(ids[start:end]) // score up to a bad item; Observe reports it
		} else {
			end = start + l.validItems(items[start:end])
		}
		if end == start { // the item at start is invalid: Observe says why
			return &BatchError{Index: start, Err: l.one(ctx, ids, items, start)}
		}
		cols, its, off := l.cols[:0], l.colItems[:0], 0
		if l.pairs && l.prev >= 0 && l.inS(l.prev) < 0 {
			cols, off = append(cols, l.prev), 1
			if ids == nil {
				its = append(its, l.prevItem)
			}
		}
		if ids != nil {
			cols = append(cols, ids[start:end]...)
		} else {
			for _, it := range items[start:end] {
				cols = append(cols, it.ID)
			}
			if off == 0 {
				its = items[start:end] // the batch's own items, not copied
			} else {
				its = append(its, items[start:end]...)
				l.colItems = its
			}
		}
		l.cols = cols
		// Without block scoring (the oracle cannot bound values), every
		// item goes through Observe until S changes.
		scored := l.scoreBlock(l.blk, cols, its)
		// A move is accepted when its value exceeds f(S)·α (see beats).
		bar := fv.Log + l.logAlpha
		version := l.changes
		c := 0
		fail := -1 // without pairs: the first column from here whose swaps were not proved
		for ; c < end-start; c++ {
			col := off + c
			t := cols[col]
			pair := l.pairs && col > 0 && cols[col-1] != t
			var ok bool
			switch {
			case !scored:
			case !l.pairs: // a run of columns' swap tests in one call
				if col > fail {
					fail = l.blk.SwapsBelowFrom(col, bar)
				}
				ok = col < fail
			default:
				ok = l.blk.SwapsBelow(col, bar) && (!pair || l.blk.PairsBelow(col-1, col, bar))
			}
			if ok && !l.pairs {
				// Columns col … fail−1 are all skipped: one pass over them.
				run, err := l.skipRun(cols[col:fail], bar)
				c += run
				if err != nil {
					return &BatchError{Index: start + c, Err: err}
				}
				c-- // the loop's c++ moves to column fail
				continue
			}
			if !ok {
				if c > 0 {
					if err := ctx.Err(); err != nil {
						return &BatchError{Index: start + c, Err: err}
					}
				}
				if err := l.one(ctx, ids, items, start+c); err != nil {
					return &BatchError{Index: start + c, Err: err}
				}
				if l.changes != version {
					c++
					break
				}
				continue
			}
			if l.inStash(t) >= 0 {
				return &BatchError{Index: start + c, Err: fmt.Errorf("stream: item %d is already in the stash", t)}
			}
			// Skipped: the oracle would have computed these values and
			// rejected every move.
			if l.onSkip != nil {
				prev := -1
				if pair {
					prev = cols[col-1]
				}
				l.onSkip(t, prev, bar)
			}
			l.items++
			l.skipped++
			l.evalBase -= int64(k)
			if l.pairs {
				if l.prev >= 0 && l.prev != t && l.inS(l.prev) < 0 {
					l.evalBase -= npairs
				}
				if ids != nil {
					l.prev, l.prevOK = t, false
				} else {
					l.setPrev(items[start+c])
				}
			}
		}
		start += c
	}
	return nil
}

// skipRun records the skipped items cols (of an algorithm without pair
// moves), as observeBatch records one: the number recorded, and the error
// for the first that is in the stash.
func (l *local) skipRun(cols []int, bar float64) (int, error) {
	for i, t := range cols {
		if l.inStash(t) >= 0 {
			l.skipN(i)
			return i, fmt.Errorf("stream: item %d is already in the stash", t)
		}
		if l.onSkip != nil {
			l.onSkip(t, -1, bar)
		}
	}
	l.skipN(len(cols))
	return len(cols), nil
}

// skipN counts n skipped items of an algorithm without pair moves: each
// would have been observed with k swap values computed.
func (l *local) skipN(n int) {
	l.items += int64(n)
	l.skipped += int64(n)
	l.evalBase -= int64(n) * int64(l.k)
}

func (l *local) initBlock() {
	l.blk = l.o.NewBlock(blockSize + 1)
	l.cols = make([]int, 0, blockSize+1)
	if l.m == nil {
		l.colItems = make([]ndpp.Item, 0, blockSize+1)
	}
}

// skippedItems returns the number of items the block scoring decided
// without the oracle (a diagnostic, not part of the saved state).
func (l *local) skippedItems() int64 { return l.skipped }

// skipFunc is told of every decision block scoring makes without the
// oracle, for tests: item t was skipped (paired with the previous item
// prev, or −1) because none of its moves' values exceeds bar; t = −1 for a
// stash-search round whose moves were all proved not to exceed bar.
type skipFunc func(t, prev int, bar float64)

func (l *local) setSkipHook(f skipFunc) { l.onSkip = f }

// BatchError reports the item of a batch that could not be observed.
type BatchError struct {
	Index int // position in the batch
	Err   error
}

// Error describes the failing item.
func (e *BatchError) Error() string { return fmt.Sprintf("batch item %d: %v", e.Index, e.Err) }

// Unwrap returns the underlying error.
func (e *BatchError) Unwrap() error { return e.Err }
