package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/sample"
)

func init() {
	register(&command{
		name:    "sample",
		globals: gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary: "exact samples of a model's NDPP (optionally given items), written as baskets",
		run:     runSample,

		interruptible: true,
	})
}

type sampleFlags struct {
	g     globals
	model string
	count int
	seed  uint64
	given string
	out   string
	block int
}

// sampleChunk is the number of samples a worker draws per job.
const sampleChunk = 64

func runSample(e *env, args []string) error {
	var f sampleFlags
	fs := newFlagSet(e, "sample", "draw exact samples Y, P(Y) = det L_Y / det(I + L), of a model's NDPP (with --given, conditioned on the given items being in Y) and write them one per line in the basket format: the model's item tokens (vocabulary, ids, or 0-based rows) separated by spaces, an empty line for an empty sample; with --json, one JSON array of tokens per line. Sample i is drawn from its own random stream (seed, i), so the output does not depend on --threads.",
		"ndpp-bench sample --model m.npz --count 1000 --seed 1 --given 12,40 --out samples.txt", &f.g)
	fs.StringVar(&f.model, "model", "", "model file (.npz) (required)")
	fs.IntVar(&f.count, "count", 10, "number of samples")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random streams")
	fs.StringVar(&f.given, "given", "", "items every sample must contain (tokens of the model's items, separated by commas or spaces)")
	fs.StringVar(&f.out, "out", "-", "output file (written atomically), or - for standard output")
	fs.IntVar(&f.block, "block", 0, fmt.Sprintf("items decided together with matrix products (0 = %d; 1 = one at a time, faster on the pure-Go backend, see sample/BENCHMARKS.md)", sample.DefaultBlock))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	switch {
	case f.model == "":
		return usagef("--model is required")
	case f.count < 0:
		return usagef("--count must be ≥ 0 (got %d)", f.count)
	case f.block < 0:
		return usagef("--block must be ≥ 0 (got %d)", f.block)
	}
	if err := checkFiles([]outfile.File{modelFile("--model", f.model)}, []outfile.File{stdFile("--out", f.out)}); err != nil {
		return err
	}
	m, err := loadModel(f.model, f.g.budget)
	if err != nil {
		return modelFileError(err)
	}
	given, err := parseGiven(m, f.given)
	if err != nil {
		return err
	}
	start := time.Now()
	ctx := e.context()
	s, err := sample.New(ctx, m, sample.Options{Block: f.block})
	if err != nil {
		return err
	}
	if len(given) > 0 {
		if s, err = s.Given(ctx, given); err != nil {
			return err
		}
	}
	prep := time.Since(start).Seconds()
	start = time.Now()
	var sizes int64
	write := func(w io.Writer) error {
		var err error
		sizes, err = writeSamples(ctx, w, s, m, f.count, f.seed, f.g.threads, f.g.json, newProgress(e, &f.g, int64(f.count), "sampling"))
		return err
	}
	if err := outfile.WriteStd(f.out, e.stdout, write); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	if !f.g.quiet {
		el := time.Since(start).Seconds()
		mean := math.NaN()
		if f.count > 0 {
			mean = float64(sizes) / float64(f.count)
		}
		fmt.Fprintf(e.stderr, "sample: %d samples of n = %d items in %.2fs (%.4g samples/s, %d workers, backend %s; preparation %.2fs); mean size %.3f, expected %.3f\n",
			f.count, m.N(), el, float64(f.count)/math.Max(el, 1e-9), max(1, f.g.threads), blas.Backend(), prep, mean, s.ExpectedSize())
	}
	return nil
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

// writeSamples draws count samples on workers goroutines (sample i from
// the PCG stream (seed, i)) and writes them to w in order. It returns the
// sum of the sample sizes. Once ctx is done it stops, with an error
// wrapping ctx.Err(), having written a prefix of the samples.
func writeSamples(ctx context.Context, w io.Writer, s *sample.Sampler, m *ndpp.Model, count int, seed uint64, workers int, asJSON bool, bar *progress) (int64, error) {
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
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(s *sample.Sampler) {
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
		}(s.Clone())
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
	return total, werr
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
