package eval

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// DefaultCooccurPairs is the pair budget of the co-occurrence baseline
// (NewCooccurrence) used by CooccurrenceBaseline: 2²¹ pairs, at most about
// 2²¹·CooccurBytesPerPair ≈ 210 MB. The 20,100 UK Online Retail baskets
// hold 1.87 million distinct pairs, the Amazon registries a few ten
// thousand, so on these data the counts are exact.
const DefaultCooccurPairs = 1 << 21

// CooccurBytesPerPair bounds the memory of one stored pair of a
// Cooccurrence, in bytes: its table entry (8 bytes in a table 3/8 to 3/4
// full: at most 22), its slot (key, count, overcount: 24), its heap place
// (8) and its two entries of the adjacency lists that Evaluate builds
// (24), at most 78 bytes (2²¹ pairs held take 96 MiB before the adjacency
// lists).
const CooccurBytesPerPair = 100

// CooccurNorm is the normalisation of the co-occurrence score: how the
// count c(j, y) of candidate j with a basket item y is weighed before it is
// summed over the items y of the conditioning set Y (Cooccurrence.Evaluate).
// c(j) is the number of training baskets that hold j.
type CooccurNorm int

const (
	// CooccurCount scores s_j = Σ_{y∈Y} c(j, y).
	CooccurCount CooccurNorm = iota
	// CooccurSqrt scores s_j = Σ_{y∈Y} c(j, y)/√c(j).
	CooccurSqrt
	// CooccurGivenCandidate scores s_j = Σ_{y∈Y} c(j, y)/c(j), the sum of
	// the conditional frequencies P(y | j).
	CooccurGivenCandidate
	// CooccurGivenItem scores s_j = Σ_{y∈Y} c(j, y)/c(y), the sum of the
	// conditional frequencies P(j | y).
	CooccurGivenItem
	// CooccurCosine scores s_j = Σ_{y∈Y} c(j, y)/√(c(j)·c(y)), the sum of
	// the cosines of j's and y's basket-incidence vectors
	// (DefaultCooccurNorm).
	CooccurCosine
)

// DefaultCooccurNorm is the normalisation of the co-occurrence baseline:
// the cosine, the strongest of the normalisations on UK Online Retail
// (learn/RESULTS.md).
const DefaultCooccurNorm = CooccurCosine

// String names the normalisation.
func (n CooccurNorm) String() string {
	switch n {
	case CooccurCount:
		return "count"
	case CooccurSqrt:
		return "sqrt"
	case CooccurGivenCandidate:
		return "given-candidate"
	case CooccurGivenItem:
		return "given-item"
	case CooccurCosine:
		return "cosine"
	}
	return fmt.Sprintf("CooccurNorm(%d)", int(n))
}

// Cooccurrence counts items and pairs of items in training baskets, in
// memory bounded by a budget of P pairs whatever the number of baskets
// (NewCooccurrence). Each basket of s distinct items adds s(s−1)/2 pair
// increments, each O(1) while fewer than P pairs are held and O(log P)
// after.
//
// Below the budget the counts are exact. Once P distinct pairs are held, a
// new pair replaces the held pair of smallest count (the space-saving
// algorithm of Metwally, Agrawal and El Abbadi, 2005): the new pair starts
// at that count plus one, and the count it inherits is kept as its
// overcount. With N pair increments in all, the smallest held count is at
// most N/P, every pair seen more often than the smallest held count is
// held, and a held pair's count minus its overcount (the count the baseline
// scores with, Count) never exceeds its true count, which never exceeds
// the held count. So beyond the budget the baseline loses the rarest pairs
// (their candidates fall back to the popularity order) and undercounts
// pairs that were evicted and came back; frequent pairs keep their counts.
// The rare pairs carry much of the baseline's signal: on UK Online Retail
// (1.87 million pairs, all baskets counted), a budget of 5·10⁵ pairs
// brings the paper MPR of 2,000 of the counted baskets from 94 to 73, and
// 10⁵ pairs to 67, below popularity; Evictions says whether the budget was reached. Item counts
// are exact and take O(items) memory.
//
// The pairs are held in an open-addressing table (linear probing on a
// hash of the packed pair key, with a fingerprint of the hash beside each
// slot number, so a probe rarely reads a key it does not want); the pairs
// of a basket are hashed and their table lines prefetched before they are
// counted in order. Before the first eviction each increment costs one
// probe; after it, the min-heap keeps each count beside its slot number,
// so the heap's comparisons read adjacent entries.
//
// A Cooccurrence is not safe for concurrent use; Evaluate only reads it.
type Cooccurrence struct {
	maxPairs int
	baskets  int64
	items    []int64 // c(i), the training baskets holding item i

	// tab is the table of held pairs: 0 for an empty entry, else
	// fp<<32 | slot+1 with fp the top 32 bits of the pair's hash (whose top
	// bits are its home entry). len(tab) is a power of two, 1<<tabBits,
	// and at most three quarters full.
	tab     []uint64
	tabBits uint

	keys []uint64 // slot → pair key (lo<<32 | hi, lo < hi)
	over []int64  // slot → overcount (count − over ≤ true count)
	// Before the first eviction, cnt[slot] is the slot's count (an upper
	// bound on the true count). After it, heap holds the slots as a
	// min-heap on their counts, hcnt[p] is the count of heap[p], pos[slot]
	// is the slot's place in the heap, and cnt is nil.
	cnt  []int64
	heap []int32
	hcnt []int64
	pos  []int32

	increments int64 // pair increments so far, N
	evictions  int64
	buf        []int
	pend       []uint64        // the pair keys of the basket being counted
	budget     memlimit.Budget // of the item counts (Add)
}

// CooccurrenceMemory bounds the memory of a Cooccurrence of at most
// maxPairs pairs (maxPairs·CooccurBytesPerPair), or -1 when it overflows an
// int64.
func CooccurrenceMemory(maxPairs int) int64 {
	return memlimit.Bytes(int64(maxPairs), CooccurBytesPerPair)
}

// NewCooccurrence returns an empty counter that holds at most maxPairs
// distinct pairs (≥ 1), or an error when CooccurrenceMemory(maxPairs), or
// later the item counts of Add, exceed the memory budget of maxBytes bytes
// (0: three quarters of the machine's or the process's memory limit).
func NewCooccurrence(maxPairs int, maxBytes int64) (*Cooccurrence, error) {
	if maxPairs < 1 || maxPairs > math.MaxInt32 {
		return nil, fmt.Errorf("eval: co-occurrence budget of %d pairs; need 1 ≤ pairs ≤ %d", maxPairs, math.MaxInt32)
	}
	budget := memlimit.Given(maxBytes, "the co-occurrence counts' maxBytes")
	if err := budget.Check(fmt.Sprintf("co-occurrence counts of %d pairs", maxPairs), CooccurrenceMemory(maxPairs)); err != nil {
		return nil, err
	}
	c := &Cooccurrence{maxPairs: maxPairs, budget: budget}
	c.tabBits = 10
	c.tab = make([]uint64, 1<<c.tabBits)
	return c, nil
}

// pairKey packs the pair {a, b}, a < b, into one key.
func pairKey(a, b int) uint64 { return uint64(a)<<32 | uint64(b) }

// pairHash is the hash of a pair key (Fibonacci hashing: its top bits
// are the home entry of the table).
func pairHash(key uint64) uint64 { return key * 0x9E3779B97F4A7C15 }

// Add counts one training basket of item ids: the basket, each distinct
// item and each pair of distinct items once (a repeated item counts once).
// An id out of [0, 2³¹) is an error and leaves the counter unchanged.
func (c *Cooccurrence) Add(basket []int) error {
	for _, it := range basket {
		if it < 0 || it > math.MaxInt32 {
			return fmt.Errorf("eval: co-occurrence: item id %d out of [0, 2³¹)", it)
		}
	}
	s := append(c.buf[:0], basket...)
	slices.Sort(s)
	s = slices.Compact(s)
	c.buf = s
	if len(s) > 0 && s[len(s)-1] >= len(c.items) {
		top := s[len(s)-1]
		if err := c.budget.Check(fmt.Sprintf("co-occurrence counts of %d items", top+1), memlimit.Bytes(int64(top)+1, 8)); err != nil {
			return err
		}
		c.items = append(c.items, make([]int64, top+1-len(c.items))...)
	}
	c.baskets++
	// The basket's pairs in the order they are counted, their table lines
	// asked for ahead (the counts must follow that order: evictions depend
	// on it).
	pend := c.pend[:0]
	for p, a := range s {
		c.items[a]++
		for _, b := range s[p+1:] {
			key := pairKey(a, b)
			pend = append(pend, key)
			f64.Prefetch(c.tab[pairHash(key)>>(64-c.tabBits):][:1])
		}
	}
	c.pend = pend
	// Then the slot entries of the pairs held (their key, and count or
	// heap place), from the first entry of each probe run, and the key
	// of the heap's root, the next pair a new one evicts.
	heap := c.heap != nil
	for _, key := range pend {
		h := pairHash(key)
		if t := c.tab[h>>(64-c.tabBits)]; t>>32 == h>>32 {
			s := uint32(t) - 1
			f64.Prefetch(c.keys[s:][:1])
			if heap {
				f64.Prefetch(c.pos[s:][:1])
			} else {
				f64.Prefetch(c.cnt[s:][:1])
			}
		}
	}
	if heap {
		f64.Prefetch(c.tab[pairHash(c.keys[c.heap[0]])>>(64-c.tabBits):][:1])
		// Last, the heap entries of the pairs held.
		for _, key := range pend {
			h := pairHash(key)
			if t := c.tab[h>>(64-c.tabBits)]; t>>32 == h>>32 {
				p := int(c.pos[uint32(t)-1])
				f64.Prefetch(c.hcnt[p:][:1])
				if l := 2*p + 1; l < len(c.hcnt) {
					f64.Prefetch(c.hcnt[l:][:1])
				}
			}
		}
	}
	for _, key := range pend {
		c.inc(key)
	}
	return nil
}

// find returns the table entry of key and its slot, or the empty entry
// where key would go and -1.
func (c *Cooccurrence) find(key uint64) (e uint64, slot int32) {
	h := pairHash(key)
	fp := h >> 32
	mask := uint64(len(c.tab) - 1)
	for e = h >> (64 - c.tabBits); ; e = (e + 1) & mask {
		t := c.tab[e]
		if t == 0 {
			return e, -1
		}
		if t>>32 == fp && c.keys[uint32(t)-1] == key {
			return e, int32(uint32(t) - 1)
		}
	}
}

// put writes slot's entry for key at the empty entry e.
func (c *Cooccurrence) put(e, key uint64, slot int32) {
	c.tab[e] = pairHash(key)>>32<<32 | uint64(slot+1)
}

// remove empties entry e, moving later entries of its probe run back so
// that every held key stays reachable from its home entry.
func (c *Cooccurrence) remove(e uint64) {
	mask := uint64(len(c.tab) - 1)
	shift := 32 - c.tabBits // home = fp >> shift
	for j := (e + 1) & mask; ; j = (j + 1) & mask {
		t := c.tab[j]
		if t == 0 {
			break
		}
		// Entry j may fill the hole at e unless its home lies
		// cyclically in (e, j].
		if home := t >> 32 >> shift; (j-home)&mask >= (j-e)&mask {
			c.tab[e] = t
			e = j
		}
	}
	c.tab[e] = 0
}

// grow doubles the table and enters the held pairs anew.
func (c *Cooccurrence) grow() {
	c.tabBits++
	c.tab = make([]uint64, 1<<c.tabBits)
	for s, key := range c.keys {
		e, _ := c.find(key)
		c.put(e, key, int32(s))
	}
}

// inc adds one to the count of a pair (space-saving beyond the budget).
func (c *Cooccurrence) inc(key uint64) {
	c.increments++
	e, i := c.find(key)
	if i >= 0 {
		if c.heap == nil {
			c.cnt[i]++
		} else {
			p := c.pos[i]
			c.hcnt[p]++
			c.down(int(p))
		}
		return
	}
	if n := len(c.keys); n < c.maxPairs {
		if 4*(n+1) > 3*len(c.tab) {
			c.grow()
			e, _ = c.find(key)
		}
		if n == cap(c.keys) {
			// Grow the slot arrays together, never past the budget.
			m := min(c.maxPairs, max(1024, 2*n))
			c.keys = slices.Grow(c.keys, m-n)
			c.cnt = slices.Grow(c.cnt, m-n)
			c.over = slices.Grow(c.over, m-n)
		}
		c.put(e, key, int32(n))
		c.keys = append(c.keys, key)
		c.cnt = append(c.cnt, 1)
		c.over = append(c.over, 0)
		return
	}
	if c.heap == nil {
		c.buildHeap()
	}
	// Replace the pair of smallest count, at the root.
	r := c.heap[0]
	old, _ := c.find(c.keys[r])
	c.remove(old)
	c.evictions++
	m := c.hcnt[0]
	c.keys[r], c.over[r] = key, m
	c.hcnt[0] = m + 1
	e, _ = c.find(key) // the removal may have moved key's empty entry
	c.put(e, key, r)
	c.down(0)
}

// buildHeap makes the min-heap of the held slots on their counts (at the
// first eviction), the counts moving beside the heap's entries.
func (c *Cooccurrence) buildHeap() {
	n := len(c.keys)
	c.heap, c.pos, c.hcnt = make([]int32, n), make([]int32, n), make([]int64, n)
	for i := range c.heap {
		c.heap[i], c.pos[i] = int32(i), int32(i)
	}
	copy(c.hcnt, c.cnt)
	c.cnt = nil
	for i := n/2 - 1; i >= 0; i-- {
		c.down(i)
	}
}

// down restores the min-heap on the counts below heap position i.
func (c *Cooccurrence) down(i int) {
	h, hc, n := c.heap, c.hcnt, len(c.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && hc[r] < hc[l] {
			j = r
		}
		if hc[i] <= hc[j] {
			return
		}
		h[i], h[j] = h[j], h[i]
		hc[i], hc[j] = hc[j], hc[i]
		c.pos[h[i]], c.pos[h[j]] = int32(i), int32(j)
		i = j
	}
}

// count returns the count of slot s (an upper bound on its true count).
func (c *Cooccurrence) count(s int) int64 {
	if c.heap == nil {
		return c.cnt[s]
	}
	return c.hcnt[c.pos[s]]
}

// Baskets returns the number of baskets counted.
func (c *Cooccurrence) Baskets() int64 { return c.baskets }

// ItemCount returns c(i), the number of baskets counted that hold item i.
func (c *Cooccurrence) ItemCount(i int) int64 {
	if i < 0 || i >= len(c.items) {
		return 0
	}
	return c.items[i]
}

// Count returns the count of the pair {i, j} the baseline scores with —
// exact below the budget, else a lower bound on the true count (the held
// count minus its overcount; 0 for a pair not held) — and the held count,
// an upper bound on the true count for a held pair (0 for a pair not held,
// whose true count is then at most MinCount).
func (c *Cooccurrence) Count(i, j int) (lower, upper int64) {
	if i == j || i < 0 || j < 0 || i > math.MaxInt32 || j > math.MaxInt32 {
		return 0, 0
	}
	_, s := c.find(pairKey(min(i, j), max(i, j)))
	if s < 0 {
		return 0, 0
	}
	n := c.count(int(s))
	return n - c.over[s], n
}

// Pairs returns the number of distinct pairs held (at most the budget).
func (c *Cooccurrence) Pairs() int { return len(c.keys) }

// EachPair calls f for every pair {i, j} held (i < j) whose count as Count
// gives it (the lower one) is positive, in no particular order, until f
// returns false.
func (c *Cooccurrence) EachPair(f func(i, j int, count int64) bool) {
	for s, k := range c.keys {
		if n := c.count(s) - c.over[s]; n > 0 && !f(int(k>>32), int(uint32(k)), n) {
			return
		}
	}
}

// Evictions returns how many held pairs a new pair has replaced; 0 means
// every count is exact.
func (c *Cooccurrence) Evictions() int64 { return c.evictions }

// Increments returns N, the pair increments so far (Σ s(s−1)/2 over the
// baskets counted).
func (c *Cooccurrence) Increments() int64 { return c.increments }

// MinCount returns the smallest held count once pairs have been evicted (a
// bound on the true count of every pair not held, at most
// Increments/budget), and 0 before.
func (c *Cooccurrence) MinCount() int64 {
	if c.heap == nil {
		return 0
	}
	return c.hcnt[0]
}

// Counting returns a Source that yields src's baskets and counts each in c
// as it goes by (an online learner's training stream, counted in the same
// pass). A basket the counter refuses ends the stream with its error.
func (c *Cooccurrence) Counting(src baskets.Source) baskets.Source {
	return &countingSource{src: src, c: c}
}

type countingSource struct {
	src baskets.Source
	c   *Cooccurrence
}

// Next returns the next basket of the source, counted.
func (s *countingSource) Next() ([]int, error) {
	b, err := s.src.Next()
	if err != nil || len(b) == 0 {
		return b, err
	}
	if err := s.c.Add(b); err != nil {
		return nil, err
	}
	return b, nil
}

// cooccurScorer scores candidates from a snapshot of a Cooccurrence: the
// held pairs with a positive lower count as adjacency lists.
type cooccurScorer struct {
	n     int
	norm  CooccurNorm
	count []float64 // c(i), item counts
	start []int32   // adjacency of item i: nbr[start[i]:start[i+1]]
	nbr   []int32
	w     []float64 // the pair's count
}

// scorer builds the scoring snapshot over items 0…n−1.
func (c *Cooccurrence) scorer(n int, norm CooccurNorm) (*cooccurScorer, error) {
	if norm < CooccurCount || norm > CooccurCosine {
		return nil, fmt.Errorf("eval: co-occurrence: unknown normalisation %d", int(norm))
	}
	if len(c.items) > n {
		for i := n; i < len(c.items); i++ {
			if c.items[i] > 0 {
				return nil, fmt.Errorf("eval: co-occurrence over %d items: item id %d was counted", n, i)
			}
		}
	}
	sc := &cooccurScorer{n: n, norm: norm, count: make([]float64, n), start: make([]int32, n+1)}
	for i := range min(n, len(c.items)) {
		sc.count[i] = float64(c.items[i])
	}
	deg := sc.start[1:]
	for s, k := range c.keys {
		if c.count(s) > c.over[s] {
			deg[k>>32]++
			deg[k&math.MaxUint32]++
		}
	}
	for i := 1; i <= n; i++ {
		sc.start[i] += sc.start[i-1]
	}
	m := int(sc.start[n])
	sc.nbr, sc.w = make([]int32, m), make([]float64, m)
	fill := slices.Clone(sc.start[:n])
	put := func(a, b uint64, w float64) {
		p := fill[a]
		sc.nbr[p], sc.w[p] = int32(b), w
		fill[a]++
	}
	for s, k := range c.keys {
		if g := c.count(s) - c.over[s]; g > 0 {
			a, b := k>>32, k&math.MaxUint32
			put(a, b, float64(g))
			put(b, a, float64(g))
		}
	}
	return sc, nil
}

func (sc *cooccurScorer) items() int   { return sc.n }
func (sc *cooccurScorer) hasTie() bool { return true }

// scoreBatch writes into dst[b] the co-occurrence score of every item given
// ys[b] and into tie[b] its popularity c(j) + 1, both 0 for the items of
// ys[b] (Cooccurrence.Evaluate). O(Σ_{y∈Y} neighbours(y) + n) per set.
func (sc *cooccurScorer) scoreBatch(ys [][]int, dst, tie [][]float64, errs []error) error {
	for b, y := range ys {
		s, t := dst[b][:sc.n], tie[b][:sc.n]
		clear(s)
		for _, it := range y {
			cy := sc.count[it]
			for p := sc.start[it]; p < sc.start[it+1]; p++ {
				j := sc.nbr[p]
				s[j] += sc.weight(sc.w[p], sc.count[j], cy)
			}
		}
		popularityTie(s, t, sc.count, y)
		errs[b] = nil
	}
	return nil
}

// weight is the normalised count c(j, y) of candidate j with basket item y.
func (sc *cooccurScorer) weight(c, cj, cy float64) float64 {
	switch sc.norm {
	case CooccurSqrt:
		return c / math.Sqrt(cj)
	case CooccurGivenCandidate:
		return c / cj
	case CooccurGivenItem:
		return c / cy
	case CooccurCosine:
		return c / math.Sqrt(cj*cy)
	}
	return c
}

// Evaluate ranks the held-out item of every test basket over items
// 0…n−1 by co-occurrence with the rest of the basket, under the paper and
// micro protocols of the package's Evaluate and by its code: the same
// held-out item (opt.Key), size bins, percentile rank and Prec@k. The
// score of candidate j given the conditioning set Y is
//
//	s_j = Σ_{y∈Y} c(j, y)/√(c(j)·c(y))
//
// for DefaultCooccurNorm (other normalisations: CooccurNorm), with c(j, y)
// the count of Count (exact below the budget) and s_j = 0 for j ∈ Y.
// Candidates are ranked by s_j and, among equal scores (in particular the
// candidates that never occurred with an item of Y, s_j = 0), by their
// training count c(j): the percentile rank is 1 − #{j ∉ Y : (s_j, c(j)) ≥
// (s_t, c(t))}/(n − |Y|), every candidate outside Y counting in the
// denominator, and Prec@k counts the candidates strictly above t in that
// order. Only the ranking metrics are set (MPR, MPRMicro, their standard
// errors, Prec@k, Predicted, Baskets): a co-occurrence count is not a
// probability of a basket, so TestLL, TestLLEps, the AUCs and their standard errors
// are NaN.
func (c *Cooccurrence) Evaluate(ctx context.Context, test [][]int, n int, norm CooccurNorm, opt Options) (*Metrics, error) {
	if n <= 0 {
		return nil, fmt.Errorf("eval: co-occurrence over n = %d items; need n ≥ 1", n)
	}
	baskets, err := protocolBaskets(test, n, opt.Key)
	if err != nil {
		return nil, err
	}
	sc, err := c.scorer(n, norm)
	if err != nil {
		return nil, err
	}
	nan := math.NaN()
	met := &Metrics{Baskets: len(baskets), TestLL: nan, TestLLEps: nan, AUC: nan, AUCMicro: nan, AUCPaired: nan,
		TestLLSE: nan, TestLLEpsSE: nan, AUCPairedSE: nan, Eps: nan}
	if err := rankMetrics(ctx, met, sc, baskets, opt.Workers); err != nil {
		return nil, err
	}
	return met, nil
}

// CountCooccurrence counts training baskets over n items in a new
// Cooccurrence of budget maxPairs.
func CountCooccurrence(train [][]int, n, maxPairs int, maxBytes int64) (*Cooccurrence, error) {
	if n <= 0 {
		return nil, fmt.Errorf("eval: n = %d items; need n ≥ 1", n)
	}
	if err := baskets.Check(train, n); err != nil {
		return nil, fmt.Errorf("eval: training %w", err)
	}
	c, err := NewCooccurrence(maxPairs, maxBytes)
	if err != nil {
		return nil, err
	}
	for _, s := range train {
		if err := c.Add(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// CooccurrenceBaseline counts the training baskets over n items with the
// budget DefaultCooccurPairs (CountCooccurrence) and evaluates the counts
// on test with DefaultCooccurNorm (Cooccurrence.Evaluate): the
// co-occurrence baseline's MPR and Prec@k.
func CooccurrenceBaseline(ctx context.Context, train, test [][]int, n int, opt Options) (*Metrics, error) {
	c, err := CountCooccurrence(train, n, DefaultCooccurPairs, opt.MaxMemory)
	if err != nil {
		return nil, err
	}
	return c.Evaluate(ctx, test, n, DefaultCooccurNorm, opt)
}
