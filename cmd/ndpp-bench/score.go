package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/internal/scorefmt"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

func init() {
	register(&command{
		name:          "score",
		globals:       gBackend | gThreads | gJSON | gQuiet | gMaxMem,
		summary:       "batch scoring: per-basket log-likelihoods or top-N next-item recommendations",
		run:           runScore,
		interruptible: true,
	})
}

// scoreChunk is a block of input baskets scored by one worker; chunks are
// written in input order.
type scoreChunk struct {
	seq     int
	lines   []int
	baskets [][]int
	out     []byte
	err     error
}

const scoreChunkSize = 256

func runScore(e *env, args []string) error {
	var g globals
	fs := newFlagSet(e, "score", "score every basket (or query) of a file with a model: log-likelihood log det L_S − log det(L+I), or with --recommend N the N items with the largest conditional gain det L_{S+j}/det L_S. Output is in input order, one line per basket: `line<TAB>value` or `line<TAB>item item ...` (JSON lines with --json). Use --input - for standard input.",
		"ndpp-bench score --model testdata/small-model.npz --input baskets.txt --recommend 5", &g)
	modelPath := fs.String("model", "", "model file (.npz) (required)")
	input := fs.String("input", "-", "basket file (one basket per line, tokens separated by spaces, commas or tabs; gzip detected), or - for stdin")
	recommend := fs.Int("recommend", 0, "emit the top N next-item recommendations instead of log-likelihoods")
	var bf basketFlags
	bf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := bf.check(); err != nil {
		return err
	}
	if err := g.apply(); err != nil {
		return err
	}
	if *modelPath == "" {
		return usagef("--model is required")
	}
	if *recommend < 0 {
		return usagef("--recommend must be ≥ 0")
	}
	if err := checkFiles([]outfile.File{modelFile("--model", *modelPath), stdFile("--input", *input)}, nil); err != nil {
		return err
	}
	m, err := loadModel(*modelPath, g.budget)
	if err != nil {
		return err
	}
	if *recommend > m.N() {
		return usagef("--recommend %d is more than the model's %d items", *recommend, m.N())
	}
	br, err := bf.open(*input, e.stdin, m.TokenVocab(), false, m.N())
	if err != nil {
		return err
	}
	defer br.Close()

	start := time.Now()
	bw := bufio.NewWriterSize(e.stdout, 1<<16)
	n, err := scoreStream(e.context(), br, bw, m, *recommend, g.threads, g.json, newProgress(e, &g, -1, "scoring"))
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if !g.quiet {
		el := time.Since(start).Seconds()
		fmt.Fprintf(e.stderr, "ndpp-bench score: %d baskets in %.2fs (%.0f/s, %d workers, backend %s)\n", n, el, float64(n)/math.Max(el, 1e-9), g.threads, blas.Backend())
	}
	return nil
}

// scoreStream reads baskets from br, scores them on workers goroutines and
// writes the results to w in input order. It returns the number of baskets.
// Once ctx is done (checked before a chunk of baskets goes to the workers,
// before it is written, and by a chunk's recommendations) it stops with an
// error wrapping ctx.Err(), the lines of the chunks before it written.
func scoreStream(ctx context.Context, br *baskets.Reader, w io.Writer, m *ndpp.Model, topN, workers int, asJSON bool, bar *progress) (int, error) {
	if workers < 1 {
		workers = 1
	}
	jobs := make(chan *scoreChunk, 2*workers)
	done := make(chan *scoreChunk, 2*workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var gains [][]float64 // ndpp.RecommendBatchSize rows of m.N() gains, made on first use
			for c := range jobs {
				c.out, c.err = scorefmt.Lines(ctx, m, c.baskets, c.lines, topN, asJSON, &gains)
				done <- c
			}
		}()
	}
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		defer close(jobs)
		seq := 0
		c := &scoreChunk{seq: seq}
		for {
			b, err := br.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				readErr <- err
				return
			}
			c.lines = append(c.lines, br.Line())
			c.baskets = append(c.baskets, b)
			if len(c.baskets) == scoreChunkSize {
				if err := ctx.Err(); err != nil {
					readErr <- err
					return
				}
				select {
				case jobs <- c:
				case <-stop:
					readErr <- nil
					return
				}
				seq++
				c = &scoreChunk{seq: seq}
			}
		}
		if len(c.baskets) > 0 {
			select {
			case jobs <- c:
			case <-stop:
			}
		}
		readErr <- nil
	}()
	go func() { wg.Wait(); close(done) }()

	pending := map[int]*scoreChunk{}
	next, total := 0, 0
	var firstErr error
	for c := range done {
		if firstErr != nil {
			continue // drain
		}
		pending[c.seq] = c
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if err := ctx.Err(); err != nil && p.err == nil {
				p.err = fmt.Errorf("stopped after %d baskets: %w", total, err)
			}
			if p.err != nil {
				firstErr = p.err
				close(stop)
				break
			}
			if _, err := w.Write(p.out); err != nil {
				firstErr = err
				close(stop)
				break
			}
			total += len(p.baskets)
			bar.Add(len(p.baskets))
		}
	}
	bar.Finish()
	if err := <-readErr; err != nil && firstErr == nil {
		firstErr = err
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			firstErr = fmt.Errorf("stopped after %d baskets: %w", total, err)
		}
	}
	return total, firstErr
}
