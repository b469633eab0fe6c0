package baskets

import (
	"fmt"
	"io"
	"math/rand/v2"
)

// SyntheticOptions configures NewSynthetic. Zero values select the
// defaults.
type SyntheticOptions struct {
	// N is the number of items (required).
	N int
	// Count is the number of baskets (required).
	Count int64
	// Topics is the number of item groups baskets draw from (default
	// max(1, N/100)): item i belongs to topic i mod Topics.
	Topics int
	// MeanSize is the mean basket size (default 8); sizes are 1 plus a
	// geometric variable, at most MaxSize.
	MeanSize float64
	// MaxSize caps the basket size (default 100, at most N).
	MaxSize int
	// Zipf is the exponent s > 1 of the items' and the topics'
	// popularity, P(rank r) ∝ (1 + r)^−s (default 1.1).
	Zipf float64
	// Mix is the share of a basket's items drawn from its topic; the rest
	// come from the whole catalogue by popularity (default 0.7).
	Mix  float64
	Seed uint64
}

// NewSynthetic returns a seeded stream of Count random baskets over N
// items with the structure of real purchase data: popularity that falls
// off as a power law, and co-purchases within topics (item groups). It
// holds O(1) state beyond its options, so it can feed learners and
// benchmarks at any scale without a file; the same options always give the
// same stream.
func NewSynthetic(opt SyntheticOptions) (Source, error) {
	if opt.N < 1 || opt.Count < 0 {
		return nil, fmt.Errorf("baskets: synthetic stream of %d baskets over %d items; need N ≥ 1 and Count ≥ 0", opt.Count, opt.N)
	}
	if opt.Topics == 0 {
		opt.Topics = max(1, opt.N/100)
	}
	if opt.MeanSize == 0 {
		opt.MeanSize = 8
	}
	if opt.MaxSize == 0 {
		opt.MaxSize = 100
	}
	opt.MaxSize = min(opt.MaxSize, opt.N)
	if opt.Zipf == 0 {
		opt.Zipf = 1.1
	}
	if opt.Mix == 0 {
		opt.Mix = 0.7
	}
	switch {
	case opt.Topics < 1 || opt.Topics > opt.N:
		return nil, fmt.Errorf("baskets: %d topics for %d items; need 1 ≤ topics ≤ N", opt.Topics, opt.N)
	case !(opt.MeanSize >= 1) || opt.MeanSize > float64(opt.MaxSize) || opt.MaxSize < 1:
		return nil, fmt.Errorf("baskets: mean basket size %v with at most %d items", opt.MeanSize, opt.MaxSize)
	case !(opt.Zipf > 1) || opt.Zipf > 100:
		return nil, fmt.Errorf("baskets: Zipf exponent %v; need 1 < s ≤ 100", opt.Zipf)
	case !(opt.Mix >= 0 && opt.Mix <= 1):
		return nil, fmt.Errorf("baskets: topic share %v outside [0, 1]", opt.Mix)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5eed5ba5e7))
	perTopic := (opt.N + opt.Topics - 1) / opt.Topics
	return &synthetic{opt: opt, rng: rng,
		items:  rand.NewZipf(rng, opt.Zipf, 1, uint64(opt.N-1)),
		topics: rand.NewZipf(rng, opt.Zipf, 1, uint64(opt.Topics-1)),
		within: rand.NewZipf(rng, opt.Zipf, 1, uint64(perTopic-1)),
		seen:   make(map[int]bool, opt.MaxSize)}, nil
}

type synthetic struct {
	opt                   SyntheticOptions
	rng                   *rand.Rand
	items, topics, within *rand.Zipf
	seen                  map[int]bool
	done                  int64
}

// Next returns the next basket (a fresh slice of distinct items) or io.EOF.
func (s *synthetic) Next() ([]int, error) {
	if s.done == s.opt.Count {
		return nil, io.EOF
	}
	s.done++
	o := s.opt
	// Size: 1 + geometric with mean MeanSize − 1, capped.
	size := 1
	if o.MeanSize > 1 {
		q := 1 / o.MeanSize // P(stop) per further item
		for size < o.MaxSize && s.rng.Float64() >= q {
			size++
		}
	}
	topic := int(s.topics.Uint64())
	clear(s.seen)
	b := make([]int, 0, size)
	for tries := 0; len(b) < size && tries < 20*size; tries++ {
		var it int
		if s.rng.Float64() < o.Mix {
			it = topic + o.Topics*int(s.within.Uint64())
			if it >= o.N {
				continue
			}
		} else {
			it = int(s.items.Uint64())
		}
		if !s.seen[it] {
			s.seen[it] = true
			b = append(b, it)
		}
	}
	return b, nil
}
