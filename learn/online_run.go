package learn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// OnlineRun configures TrainOnline.
type OnlineRun struct {
	// MaxBaskets stops after this many baskets (0: the whole source).
	MaxBaskets int64
	// TraceSet, when non-nil, records the NLL on these baskets every
	// TraceEvery baskets (default 500) and at the end.
	TraceSet   [][]int
	TraceEvery int
	// TraceSource, when TraceSet is nil and TraceSource is not, gives the
	// trace's baskets at each point, for held-out sets that fill as a
	// stream is read (baskets.HoldOut.Validation).
	TraceSource func() [][]int
	// Checkpoint, when non-empty, saves the learner atomically to this
	// path every CheckpointEvery baskets (default 10000) and at the end.
	// It must name a regular file or a path to create: a device, FIFO or
	// socket is refused before any basket is read.
	Checkpoint      string
	CheckpointEvery int
	// Progress, when non-nil, is called with the number of baskets
	// processed every ProgressEvery baskets and at the end (for progress
	// bars).
	Progress func(baskets int)
}

// ProgressEvery is the interval, in baskets, of OnlineRun.Progress calls.
const ProgressEvery = 1000

// TrainOnline makes one pass over src with a new learner (opt) and returns
// the final model. It is Run on NewOnline.
func TrainOnline(ctx context.Context, src baskets.Source, opt OnlineOptions, run OnlineRun) (*Result, error) {
	o, err := NewOnline(opt)
	if err != nil {
		return nil, err
	}
	return o.Run(ctx, src, run)
}

// Run feeds the learner baskets from src until io.EOF (or MaxBaskets) and
// returns the result. With the exact normaliser, a second goroutine
// computes the normaliser's jobs while the learner goes on (the results
// are the same bits as Observe's alone); it has ended when Run returns,
// and a pending normaliser result still takes effect at its position in a
// later Observe. Run reads src basket by basket on its own goroutine and
// keeps no basket after Observe: a source that reads ahead of it (a
// baskets.Reader with ReadAhead, baskets.NewReadAhead over any source)
// overlaps the reading with the learning, and with a baskets.Peeker the
// next basket's items' state is brought into the caches while the learner
// learns from the current one. When Run returns an error, src has been
// read Position() baskets, and one more if that basket was refused.
//
// Run checks ctx before every basket: once ctx is done it returns an
// error wrapping ctx.Err(), with the learner between two baskets, so it
// can be saved and resumed (or Run again) as if it had stopped there. To
// resume from a checkpoint, load it (LoadOnline), read the baskets it
// consumed from a new stream of the same input (SkipConsumed, which checks
// them against the checkpoint's fingerprint) and call Run. A nil src
// panics.
func (o *Online) Run(ctx context.Context, src baskets.Source, run OnlineRun) (*Result, error) {
	if src == nil {
		panic("learn: Online.Run with a nil baskets.Source")
	}
	if run.TraceEvery == 0 {
		run.TraceEvery = 500
	}
	if run.CheckpointEvery == 0 {
		run.CheckpointEvery = 10000
	}
	if run.TraceEvery < 0 || run.CheckpointEvery < 0 || run.MaxBaskets < 0 {
		return nil, errors.New("learn: negative run option")
	}
	if run.Checkpoint != "" {
		if err := checkCheckpointPath(run.Checkpoint); err != nil {
			return nil, err
		}
	}
	if o.np != nil {
		o.np.Start()
		defer o.np.Stop()
	}
	feed := newBasketFeed(o, src)
	r := &onlineRunner{o: o, run: run, res: &Result{ValLLEps: math.NaN(), NextWeight: max(o.opt.NextWeight, 0)}, begin: time.Now()}
	res, done := r.res, ctx.Done()
	for run.MaxBaskets == 0 || int64(res.Baskets) < run.MaxBaskets {
		select {
		case <-done:
			return nil, fmt.Errorf("learn: online run stopped after %d baskets: %w", res.Baskets, ctx.Err())
		default:
		}
		s, err := feed.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := o.Observe(s); err != nil {
			return nil, err
		}
		res.Baskets++
		if err := r.between(ctx); err != nil {
			return nil, err
		}
	}
	if o.np != nil {
		o.np.Stop() // the pass ends when the normaliser's goroutine does
	}
	return r.finish(ctx)
}

// onlineRunner is Run's bookkeeping between baskets: progress, the trace
// and checkpoints, and the training time, which excludes tracing and
// checkpointing (the clock is read around those, every TraceEvery or
// CheckpointEvery baskets, not around every basket).
type onlineRunner struct {
	o        *Online
	run      OnlineRun
	res      *Result
	begin    time.Time
	excluded time.Duration
}

// elapsed returns the training time so far.
func (r *onlineRunner) elapsed() time.Duration { return time.Since(r.begin) - r.excluded }

// between runs what is due after a basket: progress, trace, checkpoint.
func (r *onlineRunner) between(ctx context.Context) error {
	run, n := r.run, r.res.Baskets
	if run.Progress != nil && n%ProgressEvery == 0 {
		run.Progress(n)
	}
	if n%run.TraceEvery == 0 {
		if err := r.trace(ctx); err != nil {
			return err
		}
	}
	if run.Checkpoint != "" && n%run.CheckpointEvery == 0 {
		t0 := time.Now()
		if err := r.o.SaveFile(run.Checkpoint); err != nil {
			return err
		}
		r.excluded += time.Since(t0)
	}
	return nil
}

// trace records the NLL on the trace baskets, if any; ctx is checked
// between chunks of them (meanLogLikelihood).
func (r *onlineRunner) trace(ctx context.Context) error {
	o, set := r.o, r.run.TraceSet
	if set == nil && r.run.TraceSource != nil {
		set = r.run.TraceSource()
	}
	if len(set) == 0 {
		return nil
	}
	t0 := time.Now()
	defer func() { r.excluded += time.Since(t0) }()
	now := r.elapsed()
	n := 0
	for _, s := range set {
		for _, it := range s {
			n = max(n, it+1)
		}
	}
	for _, id := range o.ids {
		n = max(n, id+1)
	}
	// Over the ids, so that trace baskets may hold items not seen yet;
	// scored as the objective's basket term, log det(L_S + εI).
	m, err := o.ModelOver(n)
	if err != nil {
		return err
	}
	ll, err := meanLogLikelihood(ctx, m, set, o.opt.Eps, 0)
	if err != nil {
		return err
	}
	r.res.Trace = append(r.res.Trace, TracePoint{Seconds: now.Seconds(), Baskets: r.res.Baskets, NLL: -ll})
	return nil
}

// finish completes the result after the last basket: final progress,
// trace point and checkpoint, parameters and model.
func (r *onlineRunner) finish(ctx context.Context) (*Result, error) {
	o, res, run := r.o, r.res, r.run
	seconds := r.elapsed().Seconds()
	if run.Progress != nil {
		run.Progress(res.Baskets)
	}
	if res.Baskets == 0 && o.p.N == 0 {
		return nil, errors.New("learn: no baskets to learn from")
	}
	if len(res.Trace) == 0 || res.Trace[len(res.Trace)-1].Baskets != res.Baskets {
		if err := r.trace(ctx); err != nil {
			return nil, err
		}
	}
	if run.Checkpoint != "" {
		if err := o.SaveFile(run.Checkpoint); err != nil {
			return nil, err
		}
	}
	res.Seconds = seconds
	res.Iterations = res.Baskets
	res.Passes = 1
	res.Params = o.Params()
	m, err := o.Model()
	if err != nil {
		return nil, err
	}
	res.Model = m
	return res, nil
}

// basketFeed hands Run the baskets of a source. With a source that shows
// its next basket (baskets.Peeker), that basket's items' state is brought
// into the caches (prefetchItems) while the learner learns from the
// current one.
type basketFeed struct {
	o   *Online
	src baskets.Source
	pk  baskets.Peeker // src, when it is one
}

// newBasketFeed returns the feed of src for o.
func newBasketFeed(o *Online, src baskets.Source) *basketFeed {
	f := &basketFeed{o: o, src: src}
	f.pk, _ = src.(baskets.Peeker)
	return f
}

// next returns the next basket or the source's error.
func (f *basketFeed) next() ([]int, error) {
	s, err := f.src.Next()
	if err == nil && f.pk != nil {
		if nb := f.pk.Peek(); nb != nil {
			f.o.prefetchItems(nb)
		}
	}
	return s, err
}
