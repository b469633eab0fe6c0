package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/sample"
)

func init() {
	register(&command{
		name:    "sample",
		globals: gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary: "exact samples of a model's NDPP (any size or --size k, optionally given items; --method tree: sublinear), written as baskets",
		run:     runSample,

		interruptible: true,
	})
}

type sampleFlags struct {
	g         globals
	model     string
	synthetic bool
	n, d      int
	count     int
	seed      uint64
	given     string
	out       string
	block     int
	size      int
	method    string
	leaf      int
}

// sampleChunk is the number of samples a worker draws per job.
const sampleChunk = 64

// expectedTriesWork bounds the work (multiply–adds) spent on a --size
// sampler's expected number of tries with a diagonal (some 64 Gram
// products over the items, sample.KSampler.ExpectedTries); beyond it the
// report leaves the value out.
const expectedTriesWork = 1e10

// sampleReport is the report of a sample run (--json: one object).
type sampleReport struct {
	Method       string  `json:"method"`
	MethodReason string  `json:"method_reason,omitempty"`
	N            int     `json:"n"`
	D            int     `json:"d"`
	Synthetic    bool    `json:"synthetic"`
	Count        int     `json:"count"`
	Size         int     `json:"size,omitempty"`
	Given        int     `json:"given,omitempty"`
	Workers      int     `json:"workers"`
	Backend      string  `json:"backend"`
	Seconds      float64 `json:"seconds"`
	// SecondsPerSample is the sampling's wall time over the samples (with
	// several workers, the time per sample of their throughput).
	SecondsPerSample  float64 `json:"seconds_per_sample"`
	PreprocessSeconds float64 `json:"preprocess_seconds"`
	MeanSize          float64 `json:"mean_size"`
	ExpectedSize      float64 `json:"expected_size"`
	// ExpectedRejections is the mean number of proposals (tries) rejected
	// per sample: ExpectedTries − 1 of the tree's proposal or of the
	// --size sampler (absent when not computed), 0 for the linear sampler.
	ExpectedRejections *float64 `json:"expected_rejections,omitempty"`
	ObservedRejections float64  `json:"observed_rejections"`
	// Theorem2Rejections is Han et al.'s closed form less one (tree), equal
	// to ExpectedRejections when V ⊥ B (Orthogonality 0).
	Theorem2Rejections *float64 `json:"theorem2_rejections,omitempty"`
	Orthogonality      *float64 `json:"orthogonality,omitempty"`
	Scale              *float64 `json:"scale,omitempty"`
	Leaf               int      `json:"leaf,omitempty"`
	TreeBytes          int64    `json:"tree_bytes,omitempty"`
	PeakRSSBytes       *int64   `json:"peak_rss_bytes,omitempty"`
}

// drawer is a sampler the workers draw from (one clone each).
type drawer interface {
	SampleInto(ctx context.Context, rng *rand.Rand, dst []int) ([]int, error)
	Stats() sample.Stats
}

// linearDrawer counts the linear sampler's samples (one try each).
type linearDrawer struct {
	s  *sample.Sampler
	st sample.Stats
}

func (l *linearDrawer) SampleInto(ctx context.Context, rng *rand.Rand, dst []int) ([]int, error) {
	y, err := l.s.SampleInto(ctx, rng, dst)
	if err == nil {
		l.st.Samples++
		l.st.Tries++
	}
	return y, err
}

func (l *linearDrawer) Stats() sample.Stats { return l.st }

func runSample(e *env, args []string) error {
	var f sampleFlags
	fs := newFlagSet(e, "sample", "draw exact samples Y, P(Y) = det L_Y / det(I + L), of a model's NDPP (with --given, conditioned on the given items being in Y; with --size k, of the k-NDPP: |Y| = k, P(Y) ∝ det L_Y) and write them one per line in the basket format: the model's item tokens (vocabulary, ids, or 0-based rows) separated by spaces, an empty line for an empty sample; with --json, one JSON array of tokens per line, and the report as one JSON object (seconds_per_sample, preprocess_seconds, expected_rejections, observed_rejections, …; on standard output, or standard error when the samples take it; none with --quiet). --method tree draws them by rejection from a symmetric proposal with a binary tree over the items (sublinear in n per sample; no diagonal, no --given, no --size), --method auto where that is estimated to pay. --synthetic samples a random orthogonal kernel (V ⊥ B, 50 expected rejections, sample.Synthetic) of --n items and rank --d instead of --model. Sample i is drawn from its own random stream (seed, i), so the output does not depend on --threads.",
		"ndpp-bench sample --model m.npz --count 1000 --seed 1 --given 12,40 --out samples.txt\n  ndpp-bench sample --model m.npz --size 5 --count 100\n  ndpp-bench sample --synthetic --n 1000000 --d 50 --seed 1 --method tree --count 100 --threads 1 --out /dev/null --json", &f.g)
	fs.StringVar(&f.model, "model", "", "model file (.npz) (this or --synthetic)")
	fs.BoolVar(&f.synthetic, "synthetic", false, "sample a seeded random orthogonal kernel of --n items and rank --d (seed --seed) instead of --model")
	fs.IntVar(&f.n, "n", 100000, "synthetic: number of items")
	fs.IntVar(&f.d, "d", 50, "synthetic: rank parameter d")
	fs.IntVar(&f.count, "count", 10, "number of samples")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random streams (and of the synthetic kernel)")
	fs.StringVar(&f.given, "given", "", "items every sample must contain (tokens of the model's items, separated by commas or spaces)")
	fs.StringVar(&f.out, "out", "-", "output file (written atomically), or - for standard output")
	fs.IntVar(&f.block, "block", 0, fmt.Sprintf("linear sampler: items decided together with matrix products (0 = %d; 1 = one at a time, faster on the pure-Go backend, see sample/BENCHMARKS.md)", sample.DefaultBlock))
	fs.IntVar(&f.size, "size", 0, "sample the k-NDPP of this size (0: any size); the given items count toward it")
	fs.StringVar(&f.method, "method", "auto", "sampler: linear, tree (rejection from a symmetric proposal through a tree over the items: kernels without a diagonal, no --given or --size), or auto (the tree where its estimated work is below the linear sampler's and it fits the memory budget)")
	fs.IntVar(&f.leaf, "leaf", 0, fmt.Sprintf("tree: items per leaf (0 = %d)", sample.DefaultLeaf))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	method, err := sample.ParseMethod(f.method)
	if err != nil {
		return usagef("--method %q: want auto, linear or tree", f.method)
	}
	synthOnly := false
	fs.Visit(func(fl *flag.Flag) { synthOnly = synthOnly || fl.Name == "n" || fl.Name == "d" })
	switch {
	case (f.model == "") == !f.synthetic:
		return usagef("give exactly one of --model FILE and --synthetic")
	case synthOnly && !f.synthetic:
		return usagef("--n and --d apply to --synthetic only")
	case f.synthetic && (f.n < 1 || f.d < 1 || f.n < 2*f.d):
		return usagef("--synthetic needs --n ≥ 2·--d and --d ≥ 1 (got --n %d, --d %d)", f.n, f.d)
	case f.count < 0:
		return usagef("--count must be ≥ 0 (got %d)", f.count)
	case f.block < 0:
		return usagef("--block must be ≥ 0 (got %d)", f.block)
	case f.size < 0:
		return usagef("--size must be ≥ 0 (got %d; 0 = any size)", f.size)
	case f.leaf < 0:
		return usagef("--leaf must be ≥ 0 (got %d; 0 = %d)", f.leaf, sample.DefaultLeaf)
	case method == sample.MethodTree && f.size > 0:
		return usagef("--method tree samples the NDPP of any size; --size needs the linear sampler (--method linear or auto)")
	case method == sample.MethodTree && f.given != "":
		return usagef("--method tree does not condition on items; --given needs the linear sampler (--method linear or auto)")
	}
	var inputs []outfile.File
	if f.model != "" {
		inputs = append(inputs, modelFile("--model", f.model))
	}
	if err := checkFiles(inputs, []outfile.File{stdFile("--out", f.out)}); err != nil {
		return err
	}
	ctx := e.context()
	var m *ndpp.Model
	if f.synthetic {
		m, err = sample.Synthetic(ctx, f.n, f.d, f.seed, sample.SyntheticOptions{MaxMemory: f.g.budget.Option()})
		if err != nil {
			return f.g.budget.Rename(err)
		}
	} else if m, err = loadModel(f.model, f.g.budget); err != nil {
		return modelFileError(err)
	}
	if method == sample.MethodTree && m.HasDiag() {
		return usagef("--method tree: the model has a diagonal; the tree sampler needs a kernel without one (--method linear)")
	}
	given, err := parseGiven(m, f.given)
	if err != nil {
		return err
	}
	if f.size > 0 && f.size < len(given) {
		return usagef("--size %d is below the %d --given items", f.size, len(given))
	}
	rep := sampleReport{N: m.N(), D: m.D(), Synthetic: f.synthetic, Count: f.count, Size: f.size, Given: len(given),
		Workers: max(1, f.g.threads), Backend: blas.Backend()}

	start := time.Now()
	var prop *sample.Proposal
	if method == sample.MethodAuto {
		method = sample.MethodLinear
		switch {
		case f.size > 0:
			rep.MethodReason = "--size needs the linear sampler"
		case len(given) > 0:
			rep.MethodReason = "--given needs the linear sampler"
		case m.HasDiag():
			rep.MethodReason = "the model has a diagonal, which the tree sampler does not take"
		default:
			if prop, err = sample.NewProposal(ctx, m); err != nil {
				return err
			}
			leaf := cmp.Or(f.leaf, sample.DefaultLeaf)
			method, rep.MethodReason = sample.ChooseMethod(prop, f.count, leaf)
			if need := sample.TreeMemory(m.N(), prop.Rank(), leaf); method == sample.MethodTree && f.g.budget.Check("", need) != nil {
				method = sample.MethodLinear
				rep.MethodReason = fmt.Sprintf("the tree would need about %s of memory, more than the budget of %s", memlimit.Format(need), memlimit.Format(f.g.budget.Bytes))
			}
		}
	}
	rep.Method = string(method)
	var clone func() drawer
	var tries func() (float64, bool) // expected tries, when known
	switch {
	case method == sample.MethodTree:
		if prop == nil {
			if prop, err = sample.NewProposal(ctx, m); err != nil {
				return err
			}
		}
		ts, err := sample.NewTree(ctx, prop, sample.TreeOptions{Leaf: f.leaf, MaxMemory: f.g.budget.Option()})
		if err != nil {
			return f.g.budget.Rename(err)
		}
		clone = func() drawer { return ts.Clone() }
		tries = func() (float64, bool) { return prop.ExpectedTries(), true }
		rep.ExpectedSize = prop.ExpectedSize()
		th, orth := prop.Theorem2()-1, prop.Orthogonality()
		rep.Theorem2Rejections, rep.Orthogonality = &th, &orth
		rep.Leaf, rep.TreeBytes = ts.Leaf(), ts.Memory()
	case f.size > 0:
		ks, err := sample.NewK(ctx, m, f.size, sample.KOptions{Given: given, Block: f.block})
		if err != nil {
			if errors.Is(err, sample.ErrSizeZeroProb) || errors.Is(err, sample.ErrZeroProb) {
				return usagef("--size %d: %v", f.size, err)
			}
			return err
		}
		clone = func() drawer { return ks.Clone() }
		tries = func() (float64, bool) {
			r := 2 * m.D()
			if m.Shared() {
				r = m.D()
			}
			if m.HasDiag() && 128*float64(m.N())*float64(r*r) > expectedTriesWork {
				return 0, false
			}
			t, err := ks.ExpectedTries(ctx)
			return t, err == nil
		}
		rep.ExpectedSize = float64(f.size)
		sc := ks.Scale()
		rep.Scale = &sc
	default:
		s, err := sample.New(ctx, m, sample.Options{Block: f.block})
		if err != nil {
			return err
		}
		if len(given) > 0 {
			if s, err = s.Given(ctx, given); err != nil {
				return err
			}
		}
		clone = func() drawer { return &linearDrawer{s: s.Clone()} }
		tries = func() (float64, bool) { return 1, true }
		rep.ExpectedSize = s.ExpectedSize()
	}
	rep.PreprocessSeconds = time.Since(start).Seconds()
	start = time.Now()
	var sizes int64
	var st sample.Stats
	write := func(w io.Writer) error {
		var err error
		sizes, st, err = writeSamples(ctx, w, clone, m, f.count, f.seed, f.g.threads, f.g.json, newProgress(e, &f.g, int64(f.count), "sampling"))
		return err
	}
	if err := outfile.WriteStd(f.out, e.stdout, write); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	rep.Seconds = time.Since(start).Seconds()
	if f.g.quiet {
		return nil
	}
	rep.MeanSize = math.NaN()
	if f.count > 0 {
		rep.SecondsPerSample = rep.Seconds / float64(f.count)
		rep.MeanSize = float64(sizes) / float64(f.count)
		rep.ObservedRejections = float64(st.Tries-st.Samples) / float64(st.Samples)
	}
	if t, ok := tries(); ok {
		x := t - 1
		rep.ExpectedRejections = &x
	}
	if rss, ok := peakRSS(); ok {
		rep.PeakRSSBytes = &rss
	}
	return writeSampleReport(reportTo(e, f.out), &f.g, rep)
}

// writeSampleReport prints the report: one JSON object with --json, else
// a summary line on standard error.
func writeSampleReport(e *env, g *globals, r sampleReport) error {
	if g.json {
		if math.IsNaN(r.MeanSize) {
			r.MeanSize = 0
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	method := r.Method
	if r.Leaf > 0 {
		method += fmt.Sprintf(" (leaf %d)", r.Leaf)
	}
	rej := fmt.Sprintf("observed rejections %.3g", r.ObservedRejections)
	if r.ExpectedRejections != nil {
		rej = fmt.Sprintf("rejections %.3g expected, %.3g observed", *r.ExpectedRejections, r.ObservedRejections)
	}
	_, err := fmt.Fprintf(e.stderr, "sample: %d samples of n = %d items in %.2fs (%.4g samples/s, %d workers, backend %s; method %s, preparation %.2fs); mean size %.3f, expected %.3f; %s\n",
		r.Count, r.N, r.Seconds, float64(r.Count)/math.Max(r.Seconds, 1e-9), r.Workers, r.Backend, method, r.PreprocessSeconds, r.MeanSize, r.ExpectedSize, rej)
	return err
}

// parseGiven maps the --given tokens to rows (the model's vocabulary or
// ids, else 0-based rows).
func parseGiven(m *ndpp.Model, spec string) ([]int, error) {
	toks := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	voc := m.TokenVocab()
	var out []int
	for _, t := range toks {
		var row int
		if voc != nil {
			r, ok := voc.Lookup(t)
			if !ok {
				return nil, usagef("--given: %q is not an item of the model", t)
			}
			row = r
		} else {
			r, err := strconv.Atoi(t)
			if err != nil || r < 0 || r >= m.N() {
				return nil, usagef("--given: %q is not an item row in [0, %d)", t, m.N())
			}
			row = r
		}
		out = append(out, row)
	}
	if len(out) > 0 {
		if err := m.CheckItems(out); err != nil {
			return nil, usagef("--given: %v", err)
		}
	}
	return out, nil
}

// sampleJob is a run of samples [lo, hi) drawn by one worker; jobs are
// written in order.
type sampleJob struct {
	lo, hi int
	out    []byte
	sizes  int64
	err    error // the sampler's error (ctx done), the job unfinished
	done   chan struct{}
}

// writeSamples draws count samples on workers goroutines, each with its
// own clone of the sampler (sample i from the PCG stream (seed, i)), and
// writes them to w in order. It returns the sum of the sample sizes and
// the workers' Stats. Once ctx is done it stops, with an error wrapping
// ctx.Err(), having written a prefix of the samples.
func writeSamples(ctx context.Context, w io.Writer, clone func() drawer, m *ndpp.Model, count int, seed uint64, workers int, asJSON bool, bar *progress) (int64, sample.Stats, error) {
	workers = max(1, workers)
	jobs := make(chan *sampleJob, workers)
	queue := make(chan *sampleJob, 2*workers)
	stop := make(chan struct{})
	go func() {
		defer close(queue)
		defer close(jobs)
		for lo := 0; lo < count; lo += sampleChunk {
			// A job reaches the writer's queue only once a worker has it,
			// so the writer never waits for a job nobody draws.
			j := &sampleJob{lo: lo, hi: min(lo+sampleChunk, count), done: make(chan struct{})}
			select {
			case jobs <- j:
			case <-stop:
				return
			}
			select {
			case queue <- j:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	drawers := make([]drawer, workers)
	for i := range drawers {
		drawers[i] = clone()
		wg.Add(1)
		go func(s drawer) {
			defer wg.Done()
			var y []int
			for j := range jobs {
				for i := j.lo; i < j.hi; i++ {
					if y, j.err = s.SampleInto(ctx, rand.New(rand.NewPCG(seed, uint64(i))), y); j.err != nil {
						break
					}
					j.sizes += int64(len(y))
					j.out = appendSample(j.out, m, y, asJSON)
				}
				close(j.done)
			}
		}(drawers[i])
	}
	var total int64
	var werr error
	for j := range queue {
		<-j.done
		if werr == nil {
			if werr = j.err; werr == nil {
				_, werr = w.Write(j.out)
			}
			if werr != nil {
				close(stop)
			}
		}
		total += j.sizes
		bar.Add(j.hi - j.lo)
	}
	wg.Wait()
	bar.Finish()
	var st sample.Stats
	for _, d := range drawers {
		ds := d.Stats()
		st.Samples += ds.Samples
		st.Tries += ds.Tries
	}
	return total, st, werr
}

// appendSample appends one output line for the sample y.
func appendSample(b []byte, m *ndpp.Model, y []int, asJSON bool) []byte {
	if asJSON {
		toks := make([]string, len(y))
		for i, it := range y {
			toks[i] = m.Token(it)
		}
		js, _ := json.Marshal(toks) // strings always marshal
		return append(append(b, js...), '\n')
	}
	for i, it := range y {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, m.Token(it)...)
	}
	return append(b, '\n')
}
