package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Algorithm names, as used by Result.Algo and the ndpp-bench infer command.
const (
	NameStreamPartition = "stream-partition"
	NameOnlineLSS       = "online-lss"
	NameOnline2Neighbor = "online-2neighbor"
	NameOnlineGreedy    = "online-greedy"
	NameOfflineGreedy   = "offline-greedy"
	NameLocalSearch     = "local-search"
	NameExact           = "exact"
)

// DefaultAlpha is the paper's α = 1 + ε with ε = 0.1.
const DefaultAlpha = 1.1

// Solver is an online MAP solver: items arrive one at a time through Observe
// and the solver keeps a current solution of at most K items.
//
// A Solver owns its oracle. Its state can be saved with MarshalBinary and
// restored with UnmarshalBinary into a solver of the same kind built on an
// oracle of the same kind over the same model; the restored solver continues
// with identical decisions, values and counters.
type Solver interface {
	// Name returns the algorithm's name (NameOnlineLSS, …).
	Name() string
	// K returns the solution size the solver aims for.
	K() int
	// Observe processes the next item of the stream (a model item index).
	// It returns an error for an index out of range or an item that is
	// currently in the solution or the stash, and for a solver whose
	// oracle reads vector items; the state is then unchanged.
	Observe(item int) error
	// ObserveItem processes the next item given by its vectors (a solver
	// on an oracle of a vector kernel; a model-backed solver accepts only
	// items of its model: ndpp.ModelItem, or an Item with only its
	// id). It returns an error for an
	// item that does not fit the kernel (ndpp.CheckItem) or whose id is
	// in the solution or the stash; the state is then unchanged. The
	// solver keeps copies of the vectors it needs: the caller may reuse
	// the item's slices after the call.
	ObserveItem(it ndpp.Item) error
	// Solution returns a copy of the current solution (item indices, in
	// the oracle's position order).
	Solution() []int
	// Value returns log det L_S of the current solution (Log 0 for ∅).
	Value() ndpp.Value
	// Stats returns the solver's counters.
	Stats() Stats

	MarshalBinary() ([]byte, error)
	UnmarshalBinary(data []byte) error
}

// Stats are a solver's counters, measured the way the online-MAP paper
// measures them.
type Stats struct {
	Items     int64 // items observed
	Evals     int64 // determinant evaluations: candidate values computed by the oracle
	Adds      int64 // items added while the solution was not full
	Swaps     int64 // accepted swaps (single or pair moves, arriving or from the stash)
	Stash     int   // current stash size
	PeakStash int   // largest stash size seen
	Evicted   int64 // items dropped from the stash because of the stash cap
	Capped    int64 // arrivals whose stash search hit the iteration guard (see MaxStashRounds)
}

// Options configures the local-search solvers (Online-LSS, Online-2-neighbor,
// and Online-Greedy, which uses only OracleOnly).
type Options struct {
	// Alpha is the improvement factor α ≥ 1 a swap must beat: f(S') > α·f(S).
	// Zero means DefaultAlpha.
	Alpha float64
	// StashCap caps the stash size (0 = unbounded, the paper's algorithm).
	// When an insertion makes the stash larger than the cap, the oldest stash
	// item is dropped. A capped stash bounds memory at k + StashCap items, but
	// the paper's approximation guarantee, which relies on every swapped-out
	// item staying available for later swaps, no longer holds; the bound on
	// the number of swaps (each multiplies f by more than α) still does.
	StashCap int
	// OracleOnly sends every candidate value through the oracle: no block
	// scoring of arriving items and no block proof that a stash round is
	// fruitless. Results are identical either way; this is for timing the
	// oracles themselves (ndpp-bench infer --oracle naive uses it).
	OracleOnly bool
}

// MaxStashRounds bounds the stash-search rounds triggered by one arriving
// item. With α > 1 each round multiplies f(S) by more than α, so the bound is
// never reached in practice; it guards against rounding cycles when α = 1.
// Stats.Capped counts arrivals that reached it.
const MaxStashRounds = 10000

// Result is the outcome of one run of an algorithm.
type Result struct {
	Algo      string
	K         int
	Solution  []int      // item indices
	Value     ndpp.Value // log det L_S of Solution (Log 0 for ∅)
	Evals     int64      // determinant evaluations
	Adds      int64
	Swaps     int64
	Stash     int // final stash size
	PeakStash int
	Items     int64 // items processed
	Seconds   float64
}

// Objective returns the value of the cardinality-k MAP objective,
// f_k(S) = det L_S when |S| = k and 0 otherwise (a solution with fewer than k
// items is not feasible for the size-k problem).
func (r Result) Objective() ndpp.Value {
	if len(r.Solution) != r.K {
		return ndpp.ZeroValue
	}
	return r.Value
}

// ItemsPerSec returns the throughput of the run (0 when too fast to time).
func (r Result) ItemsPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Items) / r.Seconds
}

// Point is one sample of a trajectory: the solver's state after Items items.
type Point struct {
	Items int64
	Value ndpp.Value
	Size  int
	Evals int64
	Swaps int64
	Stash int
}

// RunOptions configures Run.
type RunOptions struct {
	// Every samples the trajectory after every Every items (and after the
	// last one) when Trajectory is set. Zero means 1.
	Every int
	// Trajectory receives the samples.
	Trajectory func(Point)
	// OneAtATime disables batch observation (ObserveBatch) even when the
	// solver offers it: every item goes through Observe. Results are the
	// same either way; this is for measuring and testing.
	OneAtATime bool
	// SolverTrajectory receives RunItemsAll's samples with the index of
	// their solver.
	SolverTrajectory func(solver int, p Point)
}

// BatchObserver is implemented by solvers that can observe a run of items
// faster than one Observe (ObserveItem) call per item, with identical
// results. Both methods stop between two items once ctx is done (checked
// at least once per block of items; an item whose Online-2-neighbor stash
// search is stopped is rolled back) and return a *BatchError wrapping
// ctx.Err() whose Index is the first item not observed; the items before it
// have been observed and the solver stays usable.
type BatchObserver interface {
	ObserveBatch(ctx context.Context, items []int) error
	ObserveItems(ctx context.Context, items []ndpp.Item) error
}

// Run feeds the items of order to s in turn and returns the result. The wall
// time covers the Observe calls only.
//
// Run stops between two items once ctx is done and returns an error
// wrapping ctx.Err(); an Online-2-neighbor solver also stops within an
// item's stash search, the item then rolled back (see Online2Neighbor).
// The solver has then observed a prefix of order, of s.Stats().Items items
// less those it had observed before the call, and stays usable: feeding it
// the rest of the stream gives the result of an uninterrupted run.
func Run(ctx context.Context, s Solver, order []int, opt RunOptions) (Result, error) {
	if s == nil {
		return Result{}, errNilSolver
	}
	if opt.Every < 0 {
		return Result{}, fmt.Errorf("stream: trajectory interval %d must be ≥ 1", opt.Every)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, streamError(s, 0, &BatchError{Index: 0, Err: err})
	}
	every := int64(opt.Every)
	if every == 0 {
		every = 1
	}
	var elapsed time.Duration
	start := time.Now()
	sample := func() {
		elapsed += time.Since(start)
		opt.Trajectory(pointOf(s, s.Stats()))
		start = time.Now()
	}
	if bo, ok := s.(BatchObserver); ok && !opt.OneAtATime {
		for i := 0; i < len(order); {
			end := len(order)
			if opt.Trajectory != nil {
				seen := s.Stats().Items
				end = min(end, i+int(every-seen%every))
			}
			if err := bo.ObserveBatch(ctx, order[i:end]); err != nil {
				return Result{}, streamError(s, int64(i), err)
			}
			i = end
			if opt.Trajectory != nil {
				sample()
			}
		}
		elapsed += time.Since(start)
		return resultOf(s, elapsed), nil
	}
	for i, it := range order {
		if err := ctx.Err(); err != nil {
			return Result{}, streamError(s, int64(i), &BatchError{Index: 0, Err: err})
		}
		if err := observeOne(ctx, s, it); err != nil {
			return Result{}, streamError(s, int64(i), &BatchError{Index: 0, Err: err})
		}
		if opt.Trajectory != nil {
			if s.Stats().Items%every == 0 || i == len(order)-1 {
				sample()
			}
		}
	}
	elapsed += time.Since(start)
	return resultOf(s, elapsed), nil
}

// ItemSource is a stream of items given by their vectors, read in order.
// Next returns the next items (at least one, at most max) or an error;
// io.EOF ends the stream. The items, and the slices they point into, are
// valid until the next call (readers reuse their buffers).
type ItemSource interface {
	Next(max int) ([]ndpp.Item, error)
}

// LenSource is an ItemSource that knows its number of items in advance
// (e.g. from a file header); Stream-Partition needs it.
type LenSource interface {
	ItemSource
	// Len returns the number of items of the stream, or −1 if unknown.
	Len() int
}

// SourceLen returns src's number of items when it knows it (LenSource with
// Len() ≥ 0).
func SourceLen(src ItemSource) (int, bool) {
	if ls, ok := src.(LenSource); ok {
		if n := ls.Len(); n >= 0 {
			return n, true
		}
	}
	return 0, false
}

// runChunk is the number of items RunItems asks a source for at once.
const runChunk = 4096

// streamError wraps an error of observing a batch of items that starts at
// item off of the stream: the stream position of a *BatchError's item, or
// the number of items observed when the run was stopped by its context.
func streamError(s Solver, off int64, err error) error {
	var be *BatchError
	if !errors.As(err, &be) {
		return fmt.Errorf("stream: %s: %w", s.Name(), err)
	}
	at := off + int64(be.Index)
	if errors.Is(be.Err, context.Canceled) || errors.Is(be.Err, context.DeadlineExceeded) {
		return fmt.Errorf("stream: %s: stopped after %d items of the stream: %w", s.Name(), at, be.Err)
	}
	return fmt.Errorf("stream: %s: item %d of the stream: %w", s.Name(), at, be.Err)
}

// RunItems feeds the items of src to s in turn, until src ends (io.EOF),
// and returns the result; s must be a solver of vector items (an oracle of
// a vector kernel), or a model-backed solver given ndpp.ModelItem
// items. As Run, it samples trajectories and, unless opt.OneAtATime,
// observes in batches (BatchObserver.ObserveItems). The result's wall time
// covers the solver's observation of the items, not the reading of the
// source (RunItemsAll reports that).
//
// As Run, it stops between two items once ctx is done, with an error
// wrapping ctx.Err(), leaving s usable; ctx is checked before each read of
// the source but a read that blocks (a pipe) is not interrupted.
func RunItems(ctx context.Context, s Solver, src ItemSource, opt RunOptions) (Result, error) {
	if opt.Trajectory != nil {
		tr := opt.Trajectory
		opt.SolverTrajectory = func(_ int, p Point) { tr(p) }
	}
	res, _, err := RunItemsAll(ctx, []Solver{s}, src, opt)
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// RunItemsAll reads src once and feeds every item to each of the solvers in
// turn (a chunk of items at a time), as RunItems does for one: a stream that
// cannot be read twice (a pipe) serves several algorithms. Each result's
// wall time covers its solver's observation of the items; read is the time
// spent reading the source. Trajectory samples go to
// opt.SolverTrajectory with the solver's index (opt.Trajectory is not
// used).
//
// It stops between two items once ctx is done, with an error wrapping
// ctx.Err(); each solver has then observed a prefix of the stream (its
// Stats().Items; the solvers after the stopped one have not seen the last
// chunk read) and stays usable.
func RunItemsAll(ctx context.Context, solvers []Solver, src ItemSource, opt RunOptions) (res []Result, read time.Duration, err error) {
	if opt.Every < 0 {
		return nil, 0, fmt.Errorf("stream: trajectory interval %d must be ≥ 1", opt.Every)
	}
	if len(solvers) == 0 {
		return nil, 0, errors.New("stream: RunItemsAll without solvers")
	}
	for i, s := range solvers {
		if s == nil {
			return nil, 0, fmt.Errorf("%w (solvers[%d])", errNilSolver, i)
		}
	}
	if src == nil {
		return nil, 0, errors.New("stream: nil item source")
	}
	every := int64(opt.Every)
	if every == 0 {
		every = 1
	}
	elapsed := make([]time.Duration, len(solvers))
	var seen int64
	sample := func(i int) {
		st := solvers[i].Stats()
		opt.SolverTrajectory(i, pointOf(solvers[i], st))
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, read, fmt.Errorf("stream: stopped after %d items of the stream: %w", seen, err)
		}
		want := runChunk
		if opt.SolverTrajectory != nil {
			want = int(min(int64(want), every-seen%every))
		}
		t0 := time.Now()
		items, err := src.Next(want)
		read += time.Since(t0)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, read, fmt.Errorf("stream: reading the stream after %d items: %w", seen, err)
		}
		for i, s := range solvers {
			t := time.Now()
			err := observeItems(ctx, s, items, opt.OneAtATime)
			elapsed[i] += time.Since(t)
			if err != nil {
				return nil, read, streamError(s, seen, err)
			}
		}
		seen += int64(len(items))
		if opt.SolverTrajectory != nil && seen%every == 0 {
			for i := range solvers {
				sample(i)
			}
		}
	}
	if opt.SolverTrajectory != nil && seen%every != 0 {
		for i := range solvers {
			sample(i)
		}
	}
	for i, s := range solvers {
		res = append(res, resultOf(s, elapsed[i]))
	}
	return res, read, nil
}

// observeItems feeds items to s: in a batch unless oneAtATime (or s has no
// batch method), with the failing item's index in a *BatchError (ctx.Err()
// when ctx is done before it).
func observeItems(ctx context.Context, s Solver, items []ndpp.Item, oneAtATime bool) error {
	if bo, ok := s.(BatchObserver); ok && !oneAtATime {
		return bo.ObserveItems(ctx, items)
	}
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return &BatchError{Index: i, Err: err}
		}
		var err error
		if co, ok := s.(ctxObserver); ok {
			err = co.observeItem(ctx, it)
		} else {
			err = s.ObserveItem(it)
		}
		if err != nil {
			return &BatchError{Index: i, Err: err}
		}
	}
	return nil
}

// ctxObserver is implemented by the solvers one of whose observations can
// take long (Online-2-neighbor's stash search): observeID and observeItem
// are Observe and ObserveItem that stop once ctx is done, with an error
// wrapping ctx.Err() and the item not observed.
type ctxObserver interface {
	observeID(ctx context.Context, item int) error
	observeItem(ctx context.Context, it ndpp.Item) error
}

// observeOne observes item with s, under ctx when s can be stopped within
// an item (ctxObserver).
func observeOne(ctx context.Context, s Solver, item int) error {
	if co, ok := s.(ctxObserver); ok {
		return co.observeID(ctx, item)
	}
	return s.Observe(item)
}

// sliceSource is an ItemSource over a slice.
type sliceSource struct {
	items []ndpp.Item
	pos   int
}

// SliceSource returns a source of the given items (it knows its length).
func SliceSource(items []ndpp.Item) LenSource { return &sliceSource{items: items} }

func (s *sliceSource) Next(max int) ([]ndpp.Item, error) {
	if s.pos >= len(s.items) {
		return nil, io.EOF
	}
	end := min(s.pos+max, len(s.items))
	out := s.items[s.pos:end]
	s.pos = end
	return out, nil
}

func (s *sliceSource) Len() int { return len(s.items) }

// modelSource streams a model's items as vectors.
type modelSource struct {
	m     *ndpp.Model
	order []int
	pos   int
	buf   []float64
	items []ndpp.Item
}

// ModelSource returns a source of the items of m in the given order as
// vector items: copies of their vectors (ids = model indices) in buffers
// reused from one Next to the next, as a reader of a file or a pipe would
// deliver them. It knows its length.
func ModelSource(m *ndpp.Model, order []int) LenSource {
	return &modelSource{m: m, order: order}
}

func (s *modelSource) Next(max int) ([]ndpp.Item, error) {
	if s.pos >= len(s.order) {
		return nil, io.EOF
	}
	end := min(s.pos+max, len(s.order))
	n, d := end-s.pos, s.m.D()
	if len(s.items) < n {
		s.buf = make([]float64, 2*d*n)
		s.items = make([]ndpp.Item, n)
	}
	items := s.items[:n]
	vRows, bRows, _, _ := s.m.Rows()
	shared, diag := s.m.Shared(), s.m.HasDiag()
	for c, i := range s.order[s.pos:end] {
		if i < 0 || i >= s.m.N() {
			panic(fmt.Sprintf("stream: ModelSource item %d out of range [0, %d)", i, s.m.N()))
		}
		lo := 2 * d * c
		row := s.buf[lo : lo+2*d : lo+2*d]
		it := &items[c]
		// The views of the row stay from one Next to the next.
		if len(it.V) != d || &it.V[0] != &row[0] || !shared && (len(it.B) != d || &it.B[0] != &row[d]) {
			*it = ndpp.Item{V: row[:d:d]}
			if !shared {
				it.B = row[d:]
			}
		}
		copy(it.V, vRows[i*d:(i+1)*d])
		if !shared {
			copy(it.B, bRows[i*d:(i+1)*d])
		}
		it.ID, it.Delta = i, 0
		if diag {
			it.Delta = s.m.ItemDiag(i)
		}
	}
	s.pos = end
	return items, nil
}

func (s *modelSource) Len() int { return len(s.order) }

func pointOf(s Solver, st Stats) Point {
	v := s.Value()
	return Point{Items: st.Items, Value: v, Size: len(s.Solution()), Evals: st.Evals, Swaps: st.Swaps, Stash: st.Stash}
}

func resultOf(s Solver, elapsed time.Duration) Result {
	st := s.Stats()
	return Result{
		Algo: s.Name(), K: s.K(), Solution: s.Solution(), Value: s.Value(),
		Evals: st.Evals, Adds: st.Adds, Swaps: st.Swaps, Stash: st.Stash, PeakStash: st.PeakStash,
		Items: st.Items, Seconds: elapsed.Seconds(),
	}
}

// RandomOrder returns a seeded uniform random permutation of 0..n−1 (a PCG
// stream): the same n and seed always give the same order.
func RandomOrder(n int, seed uint64) []int {
	if n < 0 {
		panic("stream: RandomOrder with n < 0")
	}
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	rng.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// IDOrder returns 0..n−1, the stream of a model's items in order.
func IDOrder(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// checkK validates a solution size against a model's rank bound
// (ndpp.Model.MaxRank) and an oracle's capacity (capacity < 0: none).
func checkK(m *ndpp.Model, k, capacity int) error {
	return checkKRank(k, m.MaxRank(), m.N(), m.Shared(), capacity)
}

// checkKRank is checkK for a rank bound r of a kernel (n < 0: the number
// of items is unknown).
func checkKRank(k, r, n int, shared bool, capacity int) error {
	if k < 1 {
		return fmt.Errorf("stream: k = %d; need k ≥ 1", k)
	}
	if k > r {
		switch {
		case r == n:
			return fmt.Errorf("stream: k = %d exceeds the number of items n = %d", k, r)
		case shared:
			return fmt.Errorf("stream: k = %d exceeds d = %d, the rank of a model with B = V and no diagonal: every larger set has determinant 0", k, r)
		}
		return fmt.Errorf("stream: k = %d exceeds 2d = %d, the rank of a model without a diagonal: every larger set has determinant 0", k, r)
	}
	if capacity >= 0 && k > capacity {
		return fmt.Errorf("stream: k = %d exceeds the oracle's capacity %d", k, capacity)
	}
	return nil
}

// errNilOracle is returned by the constructors for a nil oracle.
var errNilOracle = errors.New("stream: nil oracle")

// errNilSolver is returned by Run, RunItems and RunItemsAll for a nil
// solver.
var errNilSolver = errors.New("stream: nil solver")

// base is the state common to the online solvers.
type base struct {
	o        detcache.Oracle
	m        *ndpp.Model // nil for an oracle of vector items
	kern     ndpp.Kernel
	ichk     ndpp.ItemCheck // validates vector items
	k        int
	items    int64
	adds     int64
	swaps    int64
	evalBase int64
	changes  uint64 // solution changes so far (adds and swaps)
}

func newBase(o detcache.Oracle, k int) (base, error) {
	if o == nil {
		return base{}, errNilOracle
	}
	m, kern := o.Model(), o.Kernel()
	if m != nil {
		if err := checkK(m, k, o.Cap()); err != nil {
			return base{}, err
		}
	} else if err := checkKRank(k, kern.MaxRank(-1), -1, kern.Shared, o.Cap()); err != nil {
		return base{}, err
	}
	o.Reset()
	return base{o: o, m: m, kern: kern, ichk: ndpp.NewItemCheck(kern), k: k, evalBase: o.Evals()}, nil
}

// K returns the solution size the solver aims for.
func (b *base) K() int { return b.k }

// Solution returns a copy of the current solution in position order.
func (b *base) Solution() []int { return append([]int(nil), b.o.Items()...) }

// Value returns log det L_S of the current solution (Log 0 for ∅).
func (b *base) Value() ndpp.Value { return b.o.Value() }

// errVectors is the error of Observe on a solver of vector items.
var errVectors = errors.New("stream: the solver's oracle reads vector items: use ObserveItem")

// modelItem validates a model item index and returns the item; for a
// solver of vector items it returns errVectors.
func (b *base) modelItem(item int) (ndpp.Item, error) {
	if b.m == nil {
		return ndpp.Item{}, errVectors
	}
	if item < 0 || item >= b.m.N() {
		return ndpp.Item{}, fmt.Errorf("stream: item %d out of range [0, %d)", item, b.m.N())
	}
	// A model-backed solver reads a model item's vectors through its
	// oracle (by index): the id is enough.
	return ndpp.Item{ID: item}, nil
}

// checkItem validates an arriving item: for a model-backed solver an item
// of its model (ndpp.ModelItem, or an Item with only its id), for a solver of
// vector items one that fits the kernel; and not in S.
func (b *base) checkItem(it ndpp.Item) error {
	if b.m != nil {
		if !it.FromModel() && (it.V != nil || it.B != nil) || it.ID < 0 || it.ID >= b.m.N() {
			return fmt.Errorf("stream: item %d is not an item of the solver's model (use Observe, or ndpp.ModelItem)", it.ID)
		}
	} else if err := b.ichk.Check(it); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if b.inS(it.ID) >= 0 {
		return fmt.Errorf("stream: item %d is already in the solution", it.ID)
	}
	return nil
}

// validItems returns the number of leading items of a batch that can be
// scored in a block: for a model-backed solver those checkItem accepts;
// for a solver of vector items those of the kernel's shape (id ≥ 0, v and
// b of the kernel's lengths, δ ≥ 0 and 0 without a diagonal), O(n). Their
// values are tested by the block itself, which proves nothing about an
// item that fails ndpp.ItemCheck (detcache.Fast.ScoreBlockItems), nor
// about an item of S: such an item goes through observe, whose checkItem
// reports it.
func (b *base) validItems(items []ndpp.Item) int {
	if b.m != nil {
		for i, it := range items {
			if b.checkItem(it) != nil {
				return i
			}
		}
		return len(items)
	}
	for i := range items {
		if !b.kern.Fits(&items[i]) {
			return i
		}
	}
	return len(items)
}

// validIDs returns the number of leading model item indices of a batch
// that checkID accepts (in range, not in S): O(n), a mask of S's ids
// deciding most.
func (b *base) validIDs(ids []int) int {
	var mask uint64
	for _, it := range b.o.Items() {
		mask |= 1 << (uint(it) & 63)
	}
	n := uint(b.m.N())
	for i, it := range ids {
		if uint(it) >= n || mask&(1<<(uint(it)&63)) != 0 && b.inS(it) >= 0 {
			return i
		}
	}
	return len(ids)
}

// checkID validates a model item index of a batch (model-backed solvers)
// and that it is not in S.
func (b *base) checkID(item int) error {
	if item < 0 || item >= b.m.N() {
		return fmt.Errorf("stream: item %d out of range [0, %d)", item, b.m.N())
	}
	if b.inS(item) >= 0 {
		return fmt.Errorf("stream: item %d is already in the solution", item)
	}
	return nil
}

// prepare prepares c for it: by index for a model's item (the model's
// rows), otherwise from its vectors (copies).
func (b *base) prepare(c *detcache.Cand, it ndpp.Item) {
	if b.m != nil {
		b.o.Prepare(c, it.ID)
		return
	}
	b.o.PrepareItem(c, it)
}

// scoreBlock scores a block of arriving items: by index (ids) for a
// model-backed solver, by their vectors (items) otherwise.
func (b *base) scoreBlock(blk *detcache.Block, ids []int, items []ndpp.Item) bool {
	if b.m != nil {
		return b.o.ScoreBlock(blk, ids)
	}
	return b.o.ScoreBlockItems(blk, items)
}

// outItem returns a copy (in buf, returned for reuse) of S's item at
// position pos, to keep after it leaves S (a model's item needs no copy).
func (b *base) outItem(pos int, buf []float64) (ndpp.Item, []float64) {
	return b.o.ItemAt(pos).CopyTo(buf)
}

// inS returns item's position in S, or −1.
func (b *base) inS(item int) int {
	for p, it := range b.o.Items() {
		if it == item {
			return p
		}
	}
	return -1
}

func (b *base) stats() Stats {
	return Stats{Items: b.items, Evals: b.o.Evals() - b.evalBase, Adds: b.adds, Swaps: b.swaps}
}

// beats reports whether v > α·cur in log space (logAlpha = log α): a zero v
// never beats, and any non-zero v beats a zero cur.
func beats(v, cur ndpp.Value, logAlpha float64) bool {
	if v.Zero || math.IsNaN(v.Log) {
		return false
	}
	if cur.Zero {
		return true
	}
	return v.Log > cur.Log+logAlpha
}
