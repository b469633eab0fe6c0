package baskets

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
)

// Source yields baskets one at a time; Next returns io.EOF after the last.
// *Reader satisfies it.
type Source interface {
	Next() ([]int, error)
}

// holdOutStream is the second PCG word of HoldOut's generator, fixed so
// that a seed names the same split in every version.
const holdOutStream = 0x2545f4914f6cdd1d

// HoldOut holds out validation and test baskets of fixed sizes from a
// stream of baskets as it is read, and passes every other basket on, once:
// a one-pass split in memory independent of the stream's length (it keeps
// nVal + nTest baskets).
//
// It is reservoir sampling (Vitter's algorithm R) over nVal + nTest slots,
// seeded: after t baskets the slots hold a uniformly random subset of them,
// so at the end the held-out baskets are a uniformly random subset of the
// stream, split at random into validation and test. A basket that never
// enters the reservoir is passed on when it is read; one that enters and is
// later replaced is passed on when it is replaced, so training baskets come
// in stream order except for those delays. The same stream and seed always
// give the same split and the same training sequence, whether the stream is
// a file, a pipe or a slice (SliceSource).
type HoldOut struct {
	src        Source
	nVal, nVT  int // nVT = nVal + nTest, the reservoir's size
	rng        *rand.Rand
	slots      []heldBasket
	read       int64
	eof        bool
	err        error
	val, test  [][]int
	finishDone bool
}

type heldBasket struct {
	b   []int
	idx int64 // position in the stream
}

// NewHoldOut holds out nVal validation and nTest test baskets from src.
func NewHoldOut(src Source, nVal, nTest int, seed uint64) (*HoldOut, error) {
	if src == nil {
		return nil, errors.New("baskets: HoldOut of a nil source")
	}
	if nVal < 0 || nTest < 0 {
		return nil, fmt.Errorf("baskets: hold-out sizes nVal = %d, nTest = %d must be ≥ 0", nVal, nTest)
	}
	return &HoldOut{src: src, nVal: nVal, nVT: nVal + nTest, rng: rand.New(rand.NewPCG(seed, holdOutStream))}, nil
}

// Next returns the next training basket, or io.EOF once the stream has
// ended (after which Held gives the held-out sets). A stream with no more
// baskets than are held out ends with Held's error instead of io.EOF.
// Errors of the source are returned as they are and repeated.
func (h *HoldOut) Next() ([]int, error) {
	for {
		if h.err != nil {
			return nil, h.err
		}
		if h.eof {
			return nil, io.EOF
		}
		b, err := h.src.Next()
		if err == io.EOF {
			h.eof = true
			if h.read <= int64(h.nVT) {
				h.err = h.tooFew()
				return nil, h.err
			}
			return nil, io.EOF
		}
		if err != nil {
			h.err = err
			return nil, err
		}
		t := h.read
		h.read++
		if len(h.slots) < h.nVT {
			h.slots = append(h.slots, heldBasket{b, t})
			continue
		}
		if j := h.rng.Int64N(t + 1); j < int64(h.nVT) {
			out := h.slots[j].b
			h.slots[j] = heldBasket{b, t}
			return out, nil
		}
		return b, nil
	}
}

// tooFew is the error of a stream with no more baskets than are held out.
func (h *HoldOut) tooFew() error {
	noun := "baskets"
	if h.read == 1 {
		noun = "basket"
	}
	return fmt.Errorf("baskets: the stream has %d %s; need more than %d validation + %d test baskets",
		h.read, noun, h.nVal, h.nVT-h.nVal)
}

// Read returns the number of baskets read from the source so far.
func (h *HoldOut) Read() int64 { return h.read }

// Held returns the validation and test baskets, each in stream order, once
// Next has returned io.EOF. It is an error if the stream had no more
// baskets than are held out (nothing would be left to learn from).
func (h *HoldOut) Held() (val, test [][]int, err error) {
	if !h.eof {
		return nil, nil, errors.New("baskets: HoldOut.Held before the end of the stream")
	}
	if h.read <= int64(h.nVT) {
		return nil, nil, h.tooFew()
	}
	if !h.finishDone {
		h.finishDone = true
		// Which slot a basket ended in depends on when it arrived: shuffle
		// before cutting the slots into validation and test.
		h.rng.Shuffle(len(h.slots), func(i, j int) { h.slots[i], h.slots[j] = h.slots[j], h.slots[i] })
		h.val, h.test = inStreamOrder(h.slots[:h.nVal]), inStreamOrder(h.slots[h.nVal:])
	}
	return h.val, h.test, nil
}

// Validation returns the baskets held out for validation among those read
// so far (a uniformly random sample of them, in stream order; the final
// validation set only once the stream has ended). Traces of a learner's
// progress use it.
func (h *HoldOut) Validation() [][]int {
	if h.finishDone {
		return h.val
	}
	return inStreamOrder(h.slots[:min(h.nVal, len(h.slots))])
}

func inStreamOrder(s []heldBasket) [][]int {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b heldBasket) int { return cmp.Compare(a.idx, b.idx) })
	out := make([][]int, len(s))
	for i, x := range s {
		out[i] = x.b
	}
	return out
}

// SliceSource returns a Source over in-memory baskets; it is a Peeker.
func SliceSource(b [][]int) Source { return &sliceSource{b: b} }

type sliceSource struct {
	b [][]int
	i int
}

func (s *sliceSource) Next() ([]int, error) {
	if s.i == len(s.b) {
		return nil, io.EOF
	}
	s.i++
	return s.b[s.i-1], nil
}

// Peek returns the basket Next will return, nil at the end (Peeker).
func (s *sliceSource) Peek() []int {
	if s.i == len(s.b) {
		return nil
	}
	return s.b[s.i]
}

// HoldOutSlice applies HoldOut to in-memory baskets and returns the three
// sets: the same split a streamed HoldOut of the same baskets and seed
// gives, with the training baskets in the order it passes them on.
func HoldOutSlice(baskets [][]int, nVal, nTest int, seed uint64) (train, val, test [][]int, err error) {
	h, err := NewHoldOut(SliceSource(baskets), nVal, nTest, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	for {
		b, err := h.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, nil, err
		}
		train = append(train, b)
	}
	val, test, err = h.Held()
	return train, val, test, err
}
