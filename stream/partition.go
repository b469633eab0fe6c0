package stream

import (
	"context"
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// StreamPartition is the paper's Stream-Partition (Alg. 1). The stream length
// n is known in advance; the item at 1-based position p belongs to partition
// i = ⌈p·k/n⌉. Within partition i the solver keeps the item t maximising
// f(S_{i−1} ∪ {t}) (the first one on ties) and, at the partition's last item,
// adds it to S when that value is non-zero. When n < k some partitions are
// empty and the solution has at most n items; when n is not a multiple of k
// the partitions differ in size by at most one.
//
// One determinant evaluation per item; the solution only grows.
type StreamPartition struct {
	base
	n        int
	best     *detcache.Cand
	cur      *detcache.Cand
	bestItem int
	bestV    ndpp.Value
	have     bool
	direct   bool // Options.OracleOnly

	blk     *detcache.Block // block scoring of ObserveBatch (nil until used)
	skipped int64
	onSkip  skipFunc // nil but in tests
}

// NewStreamPartition returns a Stream-Partition solver for a stream of n
// items with solution size k (for a stream of vector items, n must be known
// in advance: from the source, e.g. an NPY header, or given by the user). A stream shorter than k is allowed (each item
// is then its own partition); k larger than the model's number of items is
// an error. Of opt only OracleOnly is used. It resets the oracle, which it
// then owns.
func NewStreamPartition(o detcache.Oracle, k, n int, opt Options) (*StreamPartition, error) {
	b, err := newBase(o, k)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("stream: stream length n = %d; need n ≥ 1", n)
	}
	if b.m != nil && k > b.m.N() {
		return nil, fmt.Errorf("stream: k = %d exceeds the model's %d items", k, b.m.N())
	}
	return &StreamPartition{base: b, n: n, best: o.NewCand(), cur: o.NewCand(), bestItem: -1, direct: opt.OracleOnly}, nil
}

// Name returns NameStreamPartition.
func (s *StreamPartition) Name() string { return NameStreamPartition }

// partition returns ⌈p·k/n⌉ for a 1-based position p.
func (s *StreamPartition) partition(p int64) int64 {
	return (p*int64(s.k) + int64(s.n) - 1) / int64(s.n)
}

// Observe processes the next item. It returns an error once n items have
// been observed.
func (s *StreamPartition) Observe(item int) error {
	it, err := s.modelItem(item)
	if err != nil {
		return err
	}
	return s.observe(it)
}

// ObserveItem processes the next item given by its vectors. It returns an
// error once n items have been observed.
func (s *StreamPartition) ObserveItem(it ndpp.Item) error { return s.observe(it) }

func (s *StreamPartition) observe(it ndpp.Item) error {
	item := it.ID
	if s.items >= int64(s.n) {
		return fmt.Errorf("stream: stream-partition was told the stream has %d items; item %d is one more", s.n, item)
	}
	if err := s.checkItem(it); err != nil {
		return err
	}
	if s.have && item == s.bestItem {
		return fmt.Errorf("stream: item %d is already the partition's candidate", item)
	}
	s.items++
	p := s.items
	s.prepare(s.cur, it)
	v := s.o.AddValue(s.cur)
	if !s.have || v.Greater(s.bestV) {
		s.best, s.cur = s.cur, s.best
		s.bestItem, s.bestV, s.have = item, v, true
	}
	if p == int64(s.n) || s.partition(p+1) != s.partition(p) {
		if s.have && !s.bestV.Zero {
			if err := s.o.Add(s.best); err != nil {
				return fmt.Errorf("stream: adding item %d: %w", s.bestItem, err)
			}
			s.adds++
			s.changes++
		}
		s.have, s.bestItem = false, -1
	}
	return nil
}

// Stats returns the counters (no stash).
func (s *StreamPartition) Stats() Stats { return s.stats() }

// MarshalBinary saves the solver's state.
func (s *StreamPartition) MarshalBinary() ([]byte, error) {
	e, err := s.marshalBase(s.Name())
	if err != nil {
		return nil, err
	}
	e.Int(s.n)
	e.Bool(s.have)
	e.Int(s.bestItem)
	if s.m == nil && s.have {
		encodeVectors(e, &s.kern, s.best.Vectors())
	}
	return e.Finish()
}

// UnmarshalBinary restores a state saved by MarshalBinary. The partition's
// current candidate is prepared again against the restored solution; that
// recomputation is not counted as a determinant evaluation of the stream.
func (s *StreamPartition) UnmarshalBinary(data []byte) error {
	nb, ob, d, err := s.unmarshalBase(data, s.Name())
	if err != nil {
		return err
	}
	n := d.Int("stream length", 1, math.MaxInt)
	have := d.Bool()
	hi := math.MaxInt
	if s.m != nil {
		hi = s.m.N() - 1
	}
	bestItem := d.Int("candidate", -1, hi)
	var best []ndpp.Item
	if s.m == nil && have {
		best = decodeVectors(d, &s.kern, []int{bestItem})
	}
	if err := d.Done(); err != nil {
		return err
	}
	if nb.items > int64(n) {
		return fmt.Errorf("stream: snapshot has n = %d, k = %d, %d items seen", n, nb.k, nb.items)
	}
	var outside []int
	if have {
		if err := checkIDs(s.o.N(), []int{bestItem}); err != nil {
			return err
		}
		outside = []int{bestItem}
	}
	if err := commitOracle(s.o, ob, nb.k, outside); err != nil {
		return err
	}
	s.base, s.n, s.have, s.bestItem = nb, n, have, bestItem
	if have {
		// Recompute the candidate's value against the restored S; the
		// evaluation it costs is not part of the stream's count.
		if s.m != nil {
			s.o.Prepare(s.best, bestItem)
		} else {
			s.o.PrepareItem(s.best, best[0])
		}
		s.bestV = s.o.AddValue(s.best)
		s.evalBase++
	} else {
		s.bestItem = -1
	}
	return nil
}

// last reports whether 1-based position p is the last of its partition.
func (s *StreamPartition) last(p int64) bool {
	return p == int64(s.n) || s.partition(p+1) != s.partition(p)
}

// ObserveBatch processes items in order with the same results as calling
// Observe on each. Within a partition S is fixed, so a block of items is
// scored against it at once (detcache.Oracle.ScoreBlock); an item whose
// value f(S ∪ {t}) the oracle proves not above the current candidate's
// cannot become the candidate and is skipped with its evaluation counted.
// The first and last item of each partition and any item that might win go
// through Observe. On an error (a *BatchError) the items before the failing
// one have been processed. Once ctx is done it stops between two items with
// a *BatchError wrapping ctx.Err(); the solver stays usable.
func (s *StreamPartition) ObserveBatch(ctx context.Context, items []int) error {
	if s.m == nil && len(items) > 0 {
		return &BatchError{Index: 0, Err: errVectors}
	}
	return s.observeBatch(ctx, items, nil)
}

// ObserveItems is ObserveBatch for items given by their vectors: the same
// results as calling ObserveItem on each.
func (s *StreamPartition) ObserveItems(ctx context.Context, items []ndpp.Item) error {
	return s.observeBatch(ctx, nil, items)
}

// observeBatch is ObserveBatch (ids) and ObserveItems (items): one of them
// is nil. ctx is checked before every block and every item that goes
// through Observe.
func (s *StreamPartition) observeBatch(ctx context.Context, ids []int, items []ndpp.Item) error {
	if s.blk == nil && !s.direct {
		s.blk = s.o.NewBlock(blockSize + 1)
	}
	n := max(len(ids), len(items))
	for start := 0; start < n; {
		if err := ctx.Err(); err != nil {
			return &BatchError{Index: start, Err: err}
		}
		p := s.items + 1 // position of the item at start
		if s.direct || !s.have || s.bestV.Zero || p > int64(s.n) || s.last(p) {
			if err := s.one(ids, items, start); err != nil {
				return err
			}
			start++
			continue
		}
		// The block: items before the partition's last one, valid ones only.
		end := start
		if ids != nil {
			for end < n && end-start < blockSize+1 && !s.last(p+int64(end-start)) {
				if s.checkID(ids[end]) != nil || ids[end] == s.bestItem {
					break
				}
				end++
			}
		} else {
			lim := start
			for lim < n && lim-start < blockSize+1 && !s.last(p+int64(lim-start)) {
				lim++
			}
			end = start + s.validItems(items[start:lim])
			for c := start; c < end; c++ {
				if items[c].ID == s.bestItem {
					end = c
					break
				}
			}
		}
		hi := max(end, start+1)
		// Without block scoring every item of the block goes through
		// Observe (S does not change before the partition's last item).
		scored := false
		if end > start {
			if ids != nil {
				scored = s.o.ScoreBlock(s.blk, ids[start:end])
			} else {
				scored = s.o.ScoreBlockItems(s.blk, items[start:end])
			}
		}
		for c := 0; c < hi-start; c++ {
			var t int
			if ids != nil {
				t = ids[start+c]
			} else {
				t = items[start+c].ID
			}
			if scored && s.blk.AddBelow(c, s.bestV.Log) {
				if s.onSkip != nil {
					s.onSkip(t, -1, s.bestV.Log)
				}
				s.items++
				s.skipped++
				s.evalBase--
				continue
			}
			if t == s.bestItem {
				return &BatchError{Index: start + c, Err: fmt.Errorf("stream: item %d is already the partition's candidate", t)}
			}
			if c > 0 {
				if err := ctx.Err(); err != nil {
					return &BatchError{Index: start + c, Err: err}
				}
			}
			if err := s.one(ids, items, start+c); err != nil {
				return err
			}
		}
		start = hi
	}
	return nil
}

// one observes item i of a batch (ids[i] by index, or items[i]).
func (s *StreamPartition) one(ids []int, items []ndpp.Item, i int) error {
	var err error
	if ids != nil {
		err = s.Observe(ids[i])
	} else {
		err = s.observe(items[i])
	}
	if err != nil {
		return &BatchError{Index: i, Err: err}
	}
	return nil
}

// skippedItems returns the number of items decided by block scoring.
func (s *StreamPartition) skippedItems() int64 { return s.skipped }

func (s *StreamPartition) setSkipHook(f skipFunc) { s.onSkip = f }
