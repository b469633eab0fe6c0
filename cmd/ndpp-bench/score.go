package main

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

func init() {
	register(&command{
		name:    "score",
		summary: "batch scoring: per-basket log-likelihoods or top-N next-item recommendations",
		run:     runScore,
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
	m, err := loadModel(*modelPath)
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
	n, err := scoreStream(br, bw, m, *recommend, g.threads, g.json, newProgress(e, &g, -1, "scoring"))
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
func scoreStream(br *baskets.Reader, w io.Writer, m *ndpp.Model, topN, workers int, asJSON bool, bar *progress) (int, error) {
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
			var gains [][]float64 // scoreRecBatch rows of m.N() gains, made on first use
			for c := range jobs {
				c.out, c.err = scoreChunkOut(c, m, topN, asJSON, &gains)
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
	}
	return total, firstErr
}

type scoreLL struct {
	Line int      `json:"line"`
	LL   *float64 `json:"log_likelihood"` // null when det L_S = 0
}

type scoreRec struct {
	Line  int       `json:"line"`
	Items []string  `json:"items"`
	Gains []float64 `json:"gains"`
	Error string    `json:"error,omitempty"`
}

// scoreRecBatch is the number of baskets whose recommendations are
// computed together (ndpp.Model.ConditionalGainsBatch), each needing a row
// of n gains.
const scoreRecBatch = 32

func scoreChunkOut(c *scoreChunk, m *ndpp.Model, topN int, asJSON bool, gains *[][]float64) ([]byte, error) {
	var out []byte
	if topN == 0 {
		lds, err := m.LogDets(c.baskets, 1)
		if err != nil {
			return nil, err
		}
		norm := m.LogNormalizer()
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return nil, fmt.Errorf("%w: log det(I + L) = %v", ndpp.ErrOverflow, norm)
		}
		for i, ld := range lds {
			ll := ld - norm
			if asJSON {
				r := scoreLL{Line: c.lines[i]}
				if !math.IsInf(ll, -1) {
					r.LL = &ll
				}
				b, err := json.Marshal(r)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", c.lines[i], err)
				}
				out = append(append(out, b...), '\n')
				continue
			}
			out = strconv.AppendInt(out, int64(c.lines[i]), 10)
			out = append(out, '\t')
			out = strconv.AppendFloat(out, ll, 'g', 10, 64)
			out = append(out, '\n')
		}
		return out, nil
	}
	if *gains == nil {
		*gains = make([][]float64, scoreRecBatch)
		for i := range *gains {
			(*gains)[i] = make([]float64, m.N())
		}
	}
	errs := make([]error, scoreRecBatch)
	for i, y := range c.baskets {
		b := i % scoreRecBatch
		if b == 0 {
			nb := min(scoreRecBatch, len(c.baskets)-i)
			if err := m.ConditionalGainsBatch(c.baskets[i:i+nb], (*gains)[:nb], errs[:nb]); err != nil {
				return nil, err
			}
		}
		g := (*gains)[b]
		r := scoreRec{Line: c.lines[i], Items: []string{}, Gains: []float64{}}
		switch err := errs[b]; {
		case errors.Is(err, ndpp.ErrSingularCondition):
			r.Error = "query set has a zero determinant"
		case err != nil:
			return nil, fmt.Errorf("line %d: %w", c.lines[i], err)
		default:
			for _, j := range topItems(g, y, topN) {
				r.Items = append(r.Items, m.Token(j))
				r.Gains = append(r.Gains, g[j])
			}
		}
		if asJSON {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", r.Line, err)
			}
			out = append(append(out, b...), '\n')
			continue
		}
		out = strconv.AppendInt(out, int64(r.Line), 10)
		out = append(out, '\t')
		if r.Error != "" {
			out = append(out, "error: "+r.Error...)
		}
		for k, it := range r.Items {
			if k > 0 {
				out = append(out, ' ')
			}
			out = append(out, it...)
		}
		out = append(out, '\n')
	}
	return out, nil
}

// topItems returns the n items with the largest gains, excluding those in y,
// best first (ties: lower index first). The gains of y's items are 0, so
// only items with a zero gain are looked up in y.
func topItems(gains []float64, y []int, n int) []int {
	h := &minHeap{g: gains}
	for j := range gains {
		if gains[j] == 0 && slices.Contains(y, j) {
			continue
		}
		if h.Len() < n {
			heap.Push(h, j)
		} else if n > 0 && h.better(j, h.idx[0]) {
			h.idx[0] = j
			heap.Fix(h, 0)
		}
	}
	out := make([]int, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(int)
	}
	return out
}

// minHeap keeps the current best n items with the worst on top.
type minHeap struct {
	g   []float64
	idx []int
}

func (h *minHeap) better(a, b int) bool {
	if h.g[a] != h.g[b] {
		return h.g[a] > h.g[b]
	}
	return a < b
}
func (h *minHeap) Len() int           { return len(h.idx) }
func (h *minHeap) Less(i, j int) bool { return h.better(h.idx[j], h.idx[i]) }
func (h *minHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *minHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *minHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
