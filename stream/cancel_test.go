package stream

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/internal/ndpptest"
	"github.com/ndpp-go/ndpp/ndpp"
)

// stopBound is a generous bound on the time a run takes to notice that its
// context is done (the runs stopped here would otherwise take far longer,
// or never end).
const stopBound = 10 * time.Second

// cancelled returns a context that is already cancelled.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestRunCancelledBefore: a run whose context is done before it starts
// observes nothing and returns the context's error, wrapped; the solver
// then runs the stream as a fresh one would.
func TestRunCancelledBefore(t *testing.T) {
	m := ndpp.Random(300, 4, 1, ndpp.RandomOptions{})
	order := RandomOrder(m.N(), 1)
	const k = 5
	for _, a := range algos(1.1, 0) {
		for _, ok := range oracleKinds() {
			for _, one := range []bool{false, true} {
				label := a.name + "/" + ok.name
				want := runFresh(t, a, ok, m, k, order, one)
				o, err := ok.new(m, k)
				require.NoError(t, err)
				s, err := a.mk(o, k, len(order))
				require.NoError(t, err)
				_, err = Run(cancelled(), s, order, RunOptions{OneAtATime: one})
				require.ErrorIs(t, err, context.Canceled, label)
				require.ErrorContains(t, err, "stopped after 0 items", label)
				require.Zero(t, s.Stats().Items, label)
				got, err := Run(context.Background(), s, order, RunOptions{OneAtATime: one})
				require.NoError(t, err, label)
				require.Empty(t, cmp.Diff(want, got, ignoreTime), label)

				vs, err := a.mk(vectorOracle(t, ok.name, m, k), k, len(order))
				require.NoError(t, err)
				_, err = RunItems(cancelled(), vs, ModelSource(m, order), RunOptions{OneAtATime: one})
				require.ErrorIs(t, err, context.Canceled, label)
				require.Zero(t, vs.Stats().Items, label)
				_, _, err = RunItemsAll(cancelled(), []Solver{vs}, ModelSource(m, order), RunOptions{})
				require.ErrorIs(t, err, context.Canceled, label)
				if bo, isBatch := s.(BatchObserver); isBatch {
					err := bo.ObserveBatch(cancelled(), order)
					require.ErrorIs(t, err, context.Canceled, label)
					var be *BatchError
					require.True(t, errors.As(err, &be), label)
					require.Zero(t, be.Index, label)
				}
			}
		}
	}
}

// runFresh runs order through a new solver of algorithm a on an oracle of
// kind ok.
func runFresh(t *testing.T, a algo, ok oracleKind, m *ndpp.Model, k int, order []int, one bool) Result {
	t.Helper()
	o, err := ok.new(m, k)
	require.NoError(t, err)
	s, err := a.mk(o, k, len(order))
	require.NoError(t, err)
	res, err := Run(context.Background(), s, order, RunOptions{OneAtATime: one})
	require.NoError(t, err)
	return res
}

// TestRunCancelledMidway: a run stopped by its context at one of many
// points (block scoring and one item at a time, model items and vector
// items) returns the context's error, wrapped, having observed a prefix of
// the stream; fed the rest of the stream, the solver ends with the result
// of an uninterrupted run (solution, value, counters, stash).
func TestRunCancelledMidway(t *testing.T) {
	m := withDiag(ndpp.Random(700, 4, 2, ndpp.RandomOptions{}), 3)
	order := RandomOrder(m.N(), 2)
	const k = 5
	stops := []int{1, 2, 5, 20, 200}
	if testing.Short() || raceEnabled {
		stops = []int{1, 3, 20}
	}
	midway, cuts := 0, map[int]bool{}
	for _, a := range algos(1.05, 0) {
		for _, ok := range oracleKinds() {
			order := order
			if a.name == NameOnline2Neighbor && ok.name == "naive" {
				order = order[:300]
			}
			for _, one := range []bool{false, true} {
				want := runFresh(t, a, ok, m, k, order, one)
				for _, after := range stops {
					label := fmtLabel(uint64(after), a.name, ok.name, k, 1.05)
					for _, vectors := range []bool{false, true} {
						var o detcache.Oracle
						if vectors {
							o = vectorOracle(t, ok.name, m, k)
						} else {
							var err error
							o, err = ok.new(m, k)
							require.NoError(t, err)
						}
						s, err := a.mk(o, k, len(order))
						require.NoError(t, err)
						run := func(ctx context.Context, rest []int) (Result, error) {
							if vectors {
								return RunItems(ctx, s, ModelSource(m, rest), RunOptions{OneAtATime: one})
							}
							return Run(ctx, s, rest, RunOptions{OneAtATime: one})
						}
						_, err = run(ndpptest.CancelAfter(after), order)
						p := int(s.Stats().Items)
						if err == nil {
							require.Equal(t, len(order), p, label)
							continue
						}
						require.ErrorIs(t, err, context.Canceled, label)
						require.ErrorContains(t, err, "stopped after", label)
						require.Less(t, p, len(order), label)
						if p > 0 {
							midway++
							cuts[p] = true
						}
						got, err := run(context.Background(), order[p:])
						require.NoError(t, err, label)
						require.Empty(t, cmp.Diff(want, got, ignoreTime), "%s: (-uninterrupted +resumed after %d items)", label, p)
					}
				}
			}
		}
	}
	t.Logf("%d runs stopped midway, after %d different numbers of items", midway, len(cuts))
	require.Positive(t, midway, "no run was stopped midway")
}

// cancelSource is a source that cancels its run's context once it has
// handed out after items (in chunks of at most 50).
type cancelSource struct {
	src    ItemSource
	n      int
	after  int
	cancel context.CancelFunc
}

func (c *cancelSource) Next(max int) ([]ndpp.Item, error) {
	items, err := c.src.Next(min(max, 50))
	c.n += len(items)
	if c.n >= c.after {
		c.cancel()
	}
	return items, err
}

// TestRunItemsAllCancelled: cancelling the context of a pass feeding
// several solvers (from the source, as a caller reacting to the stream
// would) stops it with the context's error; each solver has observed a
// prefix of the stream and, fed the rest, ends as an uninterrupted run.
func TestRunItemsAllCancelled(t *testing.T) {
	m := ndpp.Random(500, 4, 4, ndpp.RandomOptions{})
	order := RandomOrder(m.N(), 4)
	const k = 6
	var want []Result
	var solvers []Solver
	for _, a := range algos(1.1, 0) {
		s, err := a.mk(vectorOracle(t, "fast", m, k), k, len(order))
		require.NoError(t, err)
		solvers = append(solvers, s)
		s2, err := a.mk(vectorOracle(t, "fast", m, k), k, len(order))
		require.NoError(t, err)
		r, err := RunItems(context.Background(), s2, ModelSource(m, order), RunOptions{})
		require.NoError(t, err)
		want = append(want, r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := RunItemsAll(ctx, solvers, &cancelSource{src: ModelSource(m, order), after: 220, cancel: cancel}, RunOptions{})
	require.ErrorIs(t, err, context.Canceled)
	for i, s := range solvers {
		p := int(s.Stats().Items)
		require.Equal(t, 200, p, s.Name()) // the chunk read when the context was cancelled is not observed
		got, err := RunItems(context.Background(), s, ModelSource(m, order[p:]), RunOptions{})
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want[i], got, ignoreTime), s.Name())
	}
}

// endless is a stream of random vector items that never ends.
type endless struct {
	kern  ndpp.Kernel
	rng   *rand.Rand
	next  int
	items []ndpp.Item
}

func (e *endless) Next(max int) ([]ndpp.Item, error) {
	d := e.kern.D
	e.items = e.items[:0]
	for range min(max, 64) {
		it := ndpp.Item{ID: e.next, V: make([]float64, d), B: make([]float64, d)}
		for j := range d {
			it.V[j], it.B[j] = e.rng.NormFloat64(), e.rng.NormFloat64()
		}
		e.items = append(e.items, it)
		e.next++
	}
	return e.items, nil
}

// TestRunDeadline: runs with a deadline stop soon after it, with the
// deadline's error: every algorithm over a stream that never ends, and a
// slow run over a model's items (the naive oracle, every value through it).
func TestRunDeadline(t *testing.T) {
	kern := ndpp.KernelOf(ndpp.Random(10, 6, 5, ndpp.RandomOptions{}))
	for _, a := range algos(1.1, 0) {
		o, err := detcache.NewFastKernel(kern, 6)
		require.NoError(t, err)
		s, err := a.mk(o, 6, 1<<40)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		_, err = RunItems(ctx, s, &endless{kern: kern, rng: rand.New(rand.NewPCG(5, 5))}, RunOptions{})
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, a.name)
		require.Less(t, time.Since(start), stopBound, a.name)
		require.Positive(t, s.Stats().Items, a.name)
	}

	m := ndpp.Random(100000, 10, 6, ndpp.RandomOptions{})
	o, err := detcache.NewNaive(m, 12)
	require.NoError(t, err)
	s, err := NewOnline2Neighbor(o, 12, Options{OracleOnly: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Run(ctx, s, IDOrder(m.N()), RunOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), stopBound)
	require.Less(t, s.Stats().Items, int64(m.N()))
}

// TestExactMAPCancelled: exact MAP stops with the context's error before
// it starts, at a chosen check, and soon after a deadline.
func TestExactMAPCancelled(t *testing.T) {
	m := ndpp.Random(40, 6, 7, ndpp.RandomOptions{})
	_, err := ExactMAP(cancelled(), m, 3, nil)
	require.ErrorIs(t, err, context.Canceled)
	_, err = ExactMAP(ndpptest.CancelAfter(3), m, 3, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "stopped after 191 subsets")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = ExactMAP(ctx, m, 6, nil) // C(40, 6) ≈ 3.8·10⁶ determinants
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), stopBound)
}

// TestCoresetCancelled: building, merging and solving core-sets stop with
// the context's error, before they start and between the greedy rounds.
func TestCoresetCancelled(t *testing.T) {
	m := ndpp.Random(200, 4, 8, ndpp.RandomOptions{})
	kern := ndpp.KernelOf(m)
	items := vecItems(m)
	const k = 4
	_, err := Coreset(cancelled(), kern, items, k, CoresetOptions{})
	require.ErrorIs(t, err, context.Canceled)
	c, err := Coreset(context.Background(), kern, items[:100], k, CoresetOptions{})
	require.NoError(t, err)
	_, err = MergeCoresets(cancelled(), kern, []Candidates{c}, k, CoresetOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = SolveCandidates(cancelled(), kern, c, k, CoresetOptions{})
	require.ErrorIs(t, err, context.Canceled)
	for _, polish := range []bool{false, true} {
		// The entry check and the first round's pass: the context is done
		// by a later round.
		_, err = Coreset(ndpptest.CancelAfter(2), kern, items, k, CoresetOptions{Polish: polish})
		require.ErrorIs(t, err, context.Canceled)
	}
}

// stashSearchCancel is a context that is cancelled at the (n+1)-th look of
// an Online-2-neighbor stash search at it (calls of Err from other places
// are not counted, and see nil until then): it stops a run within the
// stash search of an item, at a chosen look.
type stashSearchCancel struct {
	context.Context // Deadline and Value: none
	mu              sync.Mutex
	left            int // looks left before cancellation; −1 once cancelled
	done            chan struct{}
}

func newStashSearchCancel(n int) *stashSearchCancel {
	return &stashSearchCancel{Context: context.Background(), left: n, done: make(chan struct{})}
}

func (c *stashSearchCancel) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left < 0 {
		return context.Canceled
	}
	pc, _, _, _ := runtime.Caller(1)
	if !strings.HasSuffix(runtime.FuncForPC(pc).Name(), ".stashSearch") {
		return nil
	}
	if c.left > 0 {
		c.left--
		return nil
	}
	c.left = -1
	close(c.done)
	return context.Canceled
}

func (c *stashSearchCancel) Done() <-chan struct{} { return c.done }

// TestOnline2NeighborCancelledInStashSearch: a run of Online-2-neighbor
// stopped within the stash search of an item (by Run in batches and one
// item at a time, and by RunItems, on both oracles) returns the context's
// error, wrapped; the item is rolled back: the solver's solution, value,
// stash and counters are those of a solver that observed only the items
// before it, and fed the rest of the stream from that item on, it ends
// with the result of an uninterrupted run.
func TestOnline2NeighborCancelledInStashSearch(t *testing.T) {
	m := withDiag(ndpp.Random(300, 4, 5, ndpp.RandomOptions{}), 5)
	order := RandomOrder(m.N(), 5)
	const k = 6
	opt := Options{Alpha: 1.01}
	ats := []int{0, 2, 9, 40} // the look to stop at
	if testing.Short() || raceEnabled {
		ats = []int{2, 9}
	}
	stopped := 0
	for _, ok := range oracleKinds() {
		for _, mode := range []string{"batch", "one", "items"} {
			label := ok.name + "/" + mode
			mk := func() Solver {
				var o detcache.Oracle
				if mode == "items" {
					o = vectorOracle(t, ok.name, m, k)
				} else {
					var err error
					o, err = ok.new(m, k)
					require.NoError(t, err)
				}
				s, err := NewOnline2Neighbor(o, k, opt)
				require.NoError(t, err)
				return s
			}
			run := func(ctx context.Context, s Solver, items []int) (Result, error) {
				if mode == "items" {
					return RunItems(ctx, s, ModelSource(m, items), RunOptions{})
				}
				return Run(ctx, s, items, RunOptions{OneAtATime: mode == "one"})
			}
			want, err := run(context.Background(), mk(), order)
			require.NoError(t, err, label)
			require.Positive(t, want.Stash, label)
			for _, at := range ats {
				s := mk()
				_, err := run(newStashSearchCancel(at), s, order)
				if err == nil {
					continue // fewer looks than at
				}
				require.ErrorIs(t, err, context.Canceled, "%s: look %d", label, at)
				require.ErrorContains(t, err, "stash search stopped", "%s: look %d", label, at)
				stopped++
				p := int(s.Stats().Items)
				ref := mk()
				_, err = run(context.Background(), ref, order[:p])
				require.NoError(t, err, label)
				require.Equal(t, ref.Solution(), s.Solution(), "%s: look %d: rolled back", label, at)
				require.Equal(t, ref.Value(), s.Value(), "%s: look %d: rolled back", label, at)
				require.Equal(t, ref.Stats(), s.Stats(), "%s: look %d: rolled back", label, at)
				require.Equal(t, ref.(*Online2Neighbor).Stash(), s.(*Online2Neighbor).Stash(), "%s: look %d: rolled back", label, at)
				got, err := run(context.Background(), s, order[p:])
				require.NoError(t, err, label)
				require.Empty(t, cmp.Diff(want, got, ignoreTime), "%s: look %d: (-uninterrupted +resumed at item %d)", label, at, p)
			}
		}
	}
	require.Positive(t, stopped, "no run was stopped within a stash search")
	t.Logf("%d runs stopped within a stash search", stopped)
}
