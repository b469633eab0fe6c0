package eval

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// DefaultCooccurPairs is the pair budget of the co-occurrence baseline
// (NewCooccurrence) used by CooccurrenceBaseline: 2²¹ pairs, at most about
// 2²¹·CooccurBytesPerPair ≈ 210 MB. The 20,100 UK Online Retail baskets
// hold 1.87 million distinct pairs, the Amazon registries a few ten
// thousand, so on these data the counts are exact.
const DefaultCooccurPairs = 1 << 21

// CooccurBytesPerPair bounds the memory of one held pair of a
// Cooccurrence, in bytes: its key, count and overcount (16) one and a
// quarter times, as a batch of a quarter of a budget of pair increments is
// merged in place (20), its share of the two batches' keys, the one
// filling and the one merging (4), and of the buffer that sorts a batch and
// selects the counts kept (10), then the two entries of the adjacency lists
// that Evaluate builds (24): at most 58 bytes (2²¹ pairs take 68 MiB while
// counting).
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
// increments.
//
// The pair increments are gathered in batches of max(P/4, 64) and merged
// into the held pairs, a sorted array of keys with their counts: a batch is
// sorted by radix sort on the bits its item ids use, its equal keys
// summed, and the result merged into the held pairs in one sequential
// pass. So each increment costs a few sequential passes over memory, not a
// random access to a table. A full batch is merged on a goroutine of its
// own while Add fills the next one (Add waits for it when the next one is
// full), so the caller of Add, a read-ahead goroutine of a learner's
// stream for instance, is not held up for the length of a merge. A query
// (Count, EachPair, Pairs, MinCount, Evictions, Evaluate) waits for that
// merge and merges the pending increments.
//
// Below the budget the counts are exact. Beyond it, merging follows the
// space-saving algorithm of Metwally, Agrawal and El Abbadi (2005) a batch
// at a time, as its summaries merge (Agarwal et al., 2012): a pair new to
// the held ones starts at its count in the batch plus the floor, the largest
// count dropped so far, which it keeps as its overcount; then the P pairs of
// largest count are kept (among equal counts at the cut, those of smaller
// keys) and the rest dropped, the floor rising to the largest count dropped.
// Every pair not held has a true count of at most the floor; a held pair's
// count is an upper bound on its true count and its count minus its
// overcount (the count the baseline scores with, Count) a lower bound; the
// held counts add up to at most N, the pair increments, so the floor is at
// most N/P. Beyond the budget the baseline loses the rarest pairs (their
// candidates fall back to the popularity order) and undercounts pairs that
// were dropped and came back; frequent pairs keep their counts. Which pairs
// are held then depends on the batches, so on when queries came between the
// baskets added. The rare pairs carry much of the baseline's signal: on UK
// Online Retail (1.87 million pairs, all baskets counted), a budget of 5·10⁵
// pairs brings the paper MPR of 2,000 of the counted baskets from 94 to 73,
// and 10⁵ pairs to 67 (popularity: 64); Evictions says whether the budget
// was reached. Item counts are exact and take O(items) memory.
//
// A Cooccurrence is not safe for concurrent use with Add; queries may run
// concurrently with each other. No goroutine of its own runs after a query
// returns.
type Cooccurrence struct {
	maxPairs int
	batch    int // pair increments merged at once, max(maxPairs/4, 64)
	baskets  int64
	items    []int64 // c(i), the training baskets holding item i

	// The held pairs in increasing key order (lo<<32 | hi, lo < hi), their
	// counts (upper bounds on the true counts, at most the baskets
	// counted) and overcounts (count − over ≤ true count).
	keys []uint64
	cnt  []uint32
	over []uint32

	// pend holds the keys of the pair increments not merged yet, in order;
	// while a full batch is merged (merging is open), spare is nil and
	// the merge owns the batch and the held pairs, and when it ends spare
	// is the batch's buffer, for the batch after pend.
	pend, spare []uint64
	merging     chan struct{}
	sortb       []uint64 // the radix sort's second buffer; then the selection's

	floor      uint32 // the largest count dropped: every pair not held has at most this
	increments int64  // pair increments so far, N
	evictions  int64  // pairs dropped
	buf        []int
	mu         sync.Mutex      // serialises the merge of a query
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
	return &Cooccurrence{maxPairs: maxPairs, batch: max(maxPairs/4, 64), budget: budget}, nil
}

// MaxCooccurBaskets is the number of baskets a Cooccurrence counts at
// most: a pair's held count never exceeds the baskets counted, and counts
// are held in 32 bits.
const MaxCooccurBaskets = math.MaxUint32

// pairKey packs the pair {a, b}, a < b, into one key.
func pairKey(a, b int) uint64 { return uint64(a)<<32 | uint64(b) }

// Add counts one training basket of item ids: the basket, each distinct
// item and each pair of distinct items once (a repeated item counts once).
// An id out of [0, 2³¹), or a basket beyond MaxCooccurBaskets, is an error
// and leaves the counter unchanged.
func (c *Cooccurrence) Add(basket []int) error {
	if c.baskets >= MaxCooccurBaskets {
		return fmt.Errorf("eval: co-occurrence: more than %d baskets", int64(MaxCooccurBaskets))
	}
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
	c.increments += int64(len(s)) * int64(len(s)-1) / 2
	for p, a := range s {
		c.items[a]++
		for _, b := range s[p+1:] {
			if len(c.pend) == cap(c.pend) {
				// Doubling up to a batch, so that growing copies
				// each key at most once on average.
				c.pend = append(make([]uint64, 0, min(max(2*cap(c.pend), 1024), c.batch)), c.pend...)
			}
			c.pend = append(c.pend, pairKey(a, b))
			if len(c.pend) == c.batch {
				c.startMerge()
			}
		}
	}
	return nil
}

// startMerge hands the full batch pend to a merge on a goroutine of its
// own, after the merge before it has ended, and starts the next batch.
func (c *Cooccurrence) startMerge() {
	c.waitMerge()
	batch, w := c.pend, bits.Len(uint(len(c.items)-1))
	c.pend, c.spare = c.spare[:0], nil
	done := make(chan struct{})
	c.merging = done
	go func() {
		defer close(done)
		c.merge(batch, w)
		c.spare = batch[:0]
	}()
}

// waitMerge waits for the running merge, if any, to end.
func (c *Cooccurrence) waitMerge() {
	if c.merging != nil {
		<-c.merging
		c.merging = nil
	}
}

// settle merges the pending increments, for a query.
func (c *Cooccurrence) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitMerge()
	c.merge(c.pend, bits.Len(uint(len(c.items)-1)))
	c.pend = c.pend[:0]
}

// merge merges the pair increments of batch, of items below 2^w, into the
// held pairs and, beyond the budget, keeps the pairs of largest count
// (drop). It overwrites batch.
func (c *Cooccurrence) merge(batch []uint64, w int) {
	n := len(batch)
	if n == 0 {
		return
	}
	if len(c.sortb) < n {
		c.sortb = make([]uint64, max(n, c.batch))
	}
	ks := sortPairKeys(batch, c.sortb[:n], w)
	cs := c.sortb // the batch's counts, in the buffer ks is not
	if &ks[0] == &c.sortb[0] {
		cs = batch
	}
	u := 0
	for i := 0; i < n; {
		j := i + 1
		for j < n && ks[j] == ks[i] {
			j++
		}
		ks[u], cs[u] = ks[i], uint64(j-i)
		u++
		i = j
	}
	ks, cs = ks[:u], cs[:u]
	// The merged length, then the merge from the back, in place.
	old, m := len(c.keys), len(c.keys)+u
	for i, j := 0, 0; i < old && j < u; {
		switch k := c.keys[i]; {
		case k < ks[j]:
			i++
		case k > ks[j]:
			j++
		default:
			m--
			i++
			j++
		}
	}
	c.grow(m)
	i, w := old-1, m-1
	for j := u - 1; j >= 0; w-- {
		switch {
		case i >= 0 && c.keys[i] > ks[j]:
			c.keys[w], c.cnt[w], c.over[w] = c.keys[i], c.cnt[i], c.over[i]
			i--
		case i >= 0 && c.keys[i] == ks[j]:
			c.keys[w], c.cnt[w], c.over[w] = c.keys[i], c.cnt[i]+uint32(cs[j]), c.over[i]
			i--
			j--
		default:
			c.keys[w], c.cnt[w], c.over[w] = ks[j], uint32(cs[j])+c.floor, c.floor
			j--
		}
	}
	if m > c.maxPairs {
		c.drop()
	}
}

// grow sets the length of the held pairs' arrays to m, their capacity
// growing by doubling up to the budget plus a batch.
func (c *Cooccurrence) grow(m int) {
	if m > cap(c.keys) {
		capacity := min(max(2*cap(c.keys), m, 1024), c.maxPairs+c.batch)
		c.keys = append(make([]uint64, 0, capacity), c.keys...)
		c.cnt = append(make([]uint32, 0, capacity), c.cnt...)
		c.over = append(make([]uint32, 0, capacity), c.over...)
	}
	c.keys, c.cnt, c.over = c.keys[:m], c.cnt[:m], c.over[:m]
}

// drop keeps the maxPairs held pairs of largest count, among equal counts
// at the cut those of smaller keys, and raises the floor to the largest
// count dropped.
func (c *Cooccurrence) drop() {
	n, k := len(c.keys), c.maxPairs
	if len(c.sortb) < n {
		c.sortb = make([]uint64, c.maxPairs+c.batch) // n at most
	}
	sel := c.sortb[:n]
	for i, x := range c.cnt {
		sel[i] = uint64(x)
	}
	t := uint32(kthLargest(sel, k))
	ties := k // the pairs of count t kept
	for _, x := range c.cnt {
		if x > t {
			ties--
		}
	}
	w, dropped := 0, uint32(0)
	for i, x := range c.cnt {
		if x > t || x == t && ties > 0 {
			if x == t {
				ties--
			}
			c.keys[w], c.cnt[w], c.over[w] = c.keys[i], x, c.over[i]
			w++
		} else {
			dropped = max(dropped, x)
		}
	}
	c.keys, c.cnt, c.over = c.keys[:w], c.cnt[:w], c.over[:w]
	c.evictions += int64(n - w)
	c.floor = max(c.floor, dropped)
}

// sortPairKeys sorts the pair keys of items below 2^w by radix sort on
// their 2w bits, in digits of at most 11 bits, with buf (as long as keys)
// as the second buffer, and returns the sorted keys: keys or buf.
func sortPairKeys(keys, buf []uint64, w int) []uint64 {
	nb := 2 * w
	if nb == 0 || len(keys) < 2 {
		return keys
	}
	passes := (nb + 10) / 11
	dw := (nb + passes - 1) / passes
	mask := uint64(1)<<dw - 1
	packed := func(k uint64) uint64 { return k>>32<<w | k&math.MaxUint32 }
	hist := make([][1 << 11]int, passes)
	for _, k := range keys {
		x := packed(k)
		for p := range hist {
			hist[p][x>>(p*dw)&mask]++
		}
	}
	src, dst := keys, buf
	for p := range hist {
		sh, h := p*dw, &hist[p]
		if h[packed(src[0])>>sh&mask] == len(keys) {
			continue // one digit: the pass would move nothing
		}
		sum := 0
		for d, c := range h[:mask+1] {
			h[d] = sum
			sum += c
		}
		dst = dst[:len(src)]
		for _, k := range src {
			d := packed(k) >> sh & mask
			dst[h[d]] = k
			h[d]++
		}
		src, dst = dst, src
	}
	return src
}

// kthLargest returns the k-th largest of a (1 ≤ k ≤ len(a)), reordering a
// (quickselect with Hoare's partition and a median-of-three pivot).
func kthLargest(a []uint64, k int) uint64 {
	lo, hi, t := 0, len(a)-1, k-1
	for lo < hi {
		x, y, z := a[lo], a[lo+(hi-lo)/2], a[hi]
		p := max(min(x, y), min(max(x, y), z)) // the median of the three
		i, j := lo, hi
		for i <= j {
			for a[i] > p {
				i++
			}
			for a[j] < p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case t <= j:
			hi = j
		case t >= i:
			lo = i
		default:
			return a[t] // between the parts: equal to the pivot
		}
	}
	return a[t]
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
	c.settle()
	s, ok := slices.BinarySearch(c.keys, pairKey(min(i, j), max(i, j)))
	if !ok {
		return 0, 0
	}
	return int64(c.cnt[s] - c.over[s]), int64(c.cnt[s])
}

// Pairs returns the number of distinct pairs held (at most the budget).
func (c *Cooccurrence) Pairs() int {
	c.settle()
	return len(c.keys)
}

// EachPair calls f for every pair {i, j} held (i < j) whose count as Count
// gives it (the lower one) is positive, in increasing order of (i, j),
// until f returns false.
func (c *Cooccurrence) EachPair(f func(i, j int, count int64) bool) {
	c.settle()
	for s, k := range c.keys {
		if n := int64(c.cnt[s] - c.over[s]); n > 0 && !f(int(k>>32), int(uint32(k)), n) {
			return
		}
	}
}

// Evictions returns how many held pairs have been dropped to keep within
// the budget; 0 means every count is exact.
func (c *Cooccurrence) Evictions() int64 {
	c.settle()
	return c.evictions
}

// Increments returns N, the pair increments so far (Σ s(s−1)/2 over the
// baskets counted).
func (c *Cooccurrence) Increments() int64 { return c.increments }

// MinCount returns the largest count dropped once pairs have been dropped
// (a bound on the true count of every pair not held, at most
// Increments/budget, and at most every held count), and 0 before.
func (c *Cooccurrence) MinCount() int64 {
	c.settle()
	return int64(c.floor)
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
	c.settle()
	sc := &cooccurScorer{n: n, norm: norm, count: make([]float64, n), start: make([]int32, n+1)}
	for i := range min(n, len(c.items)) {
		sc.count[i] = float64(c.items[i])
	}
	deg := sc.start[1:]
	for s, k := range c.keys {
		if c.cnt[s] > c.over[s] {
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
		if g := c.cnt[s] - c.over[s]; g > 0 {
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
