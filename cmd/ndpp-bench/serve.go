package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/rerank"
	"github.com/ndpp-go/ndpp/serve"
)

func init() {
	register(&command{
		name:    "serve",
		globals: gBackend | gMaxMem,
		summary: "JSON-over-HTTP service: score baskets, recommend next items, rerank candidates; Prometheus metrics, reload on SIGHUP",
		run:     runServe,
	})
}

// serveSignals subscribes c to the signals serve acts on and returns the
// function that unsubscribes it (tests replace it to send their own).
var serveSignals = func(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	return func() { signal.Stop(c) }
}

// runServe serves the --model file with package serve until SIGTERM or
// SIGINT, then drains (serve.Run): /readyz answers 503 at once while the
// listener keeps accepting and serving for --drain-delay (a second
// SIGTERM or SIGINT skips the rest of the delay), then the listener closes
// and the requests in flight finish or meet their deadlines. It returns
// nil when they have all answered, and an error naming how many were
// still running if they have not by --shutdown-timeout after the listener
// closed. SIGHUP reloads the model file (a broken file keeps the old
// model).
func runServe(e *env, args []string) error {
	var g globals
	opts := serve.DefaultOptions()
	lim := &opts.Limits
	fs := newFlagSet(e, "serve", "serve a model over HTTP with JSON: POST /v1/score, /v1/recommend, /v1/rerank; GET /v1/model, /healthz, /readyz, /metrics (Prometheus). Items are the model's tokens, as in basket files (JSON strings or integers). SIGHUP reloads the model file (a broken file keeps the old model). "+
		"/healthz is liveness: 200 while the process serves. /readyz answers 503 with a JSON reason while every --max-inflight slot has been busy without a break for --saturation-threshold, and from SIGTERM or SIGINT on; 200 otherwise. "+
		"SIGTERM or SIGINT drains: not ready at once, requests still accepted and served for --drain-delay (a second signal skips the rest of the delay), then the listener closes and the requests in flight finish; the exit status is 0 when they have all answered, 1 if some still run --shutdown-timeout after the listener closed.",
		"ndpp-bench serve --model M.npz --addr 127.0.0.1:8080", &g)
	modelPath := fs.String("model", "", "model file (.npz) (required)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", opts.ShutdownTimeout, "longest wait for requests in flight once the listener has closed at shutdown (longer than --max-rerank-timeout); past it serve exits 1")
	fs.DurationVar(&opts.DrainDelay, "drain-delay", opts.DrainDelay, "after SIGTERM or SIGINT, how long /readyz answers 503 while requests are still accepted and served, before the listener closes (0: close at once)")
	fs.DurationVar(&opts.SaturationThreshold, "saturation-threshold", opts.SaturationThreshold, "/readyz answers 503 once every --max-inflight slot has been busy this long without a break (0: as soon as all are busy)")
	fs.Int64Var(&lim.MaxBody, "max-body", lim.MaxBody, "largest request body in bytes")
	fs.IntVar(&lim.MaxCandidates, "max-candidates", lim.MaxCandidates, "most candidates in a /v1/rerank request")
	fs.IntVar(&lim.MaxK, "max-k", lim.MaxK, "largest k of /v1/rerank")
	fs.IntVar(&lim.MaxShown, "max-shown", lim.MaxShown, "most shown items in a /v1/rerank request")
	fs.IntVar(&lim.MaxItems, "max-items", lim.MaxItems, "most items in a basket (/v1/score, /v1/recommend)")
	fs.IntVar(&lim.MaxBaskets, "max-baskets", lim.MaxBaskets, "most baskets in a /v1/score or /v1/recommend request")
	fs.IntVar(&lim.MaxN, "max-n", lim.MaxN, "largest n of /v1/recommend")
	fs.IntVar(&lim.MaxInflight, "max-inflight", lim.MaxInflight, "requests computed at once; more wait for a slot")
	fs.DurationVar(&lim.RerankTimeout, "rerank-timeout", lim.RerankTimeout, "deadline of a /v1/rerank request without timeout_ms; past it the answer is degraded (see the response's degraded)")
	fs.DurationVar(&lim.MaxRerankTimeout, "max-rerank-timeout", lim.MaxRerankTimeout, "largest timeout_ms of a /v1/rerank request")
	fs.Int64Var(&lim.MaxPolishRatios, "max-polish-ratios", lim.MaxPolishRatios, "largest polish_max_ratios of /v1/rerank (determinant ratios of the polish), and its default")
	fs.IntVar(&lim.MaxPolishPool, "max-polish-pool", lim.MaxPolishPool, fmt.Sprintf("largest polish_pool of /v1/rerank (at most %d)", rerank.MaxPolishPool))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.apply(); err != nil {
		return err
	}
	if *modelPath == "" {
		return usagef("--model is required")
	}
	if err := checkFiles([]outfile.File{modelFile("--model", *modelPath)}, nil); err != nil {
		return err
	}
	if err := opts.Check(); err != nil {
		return usageError{err.Error()}
	}
	logger := log.New(e.stderr, "ndpp-bench serve: ", log.LstdFlags)
	opts.Logger = logger
	src := budgetSource{serve.File(*modelPath, npz.LoadOptions{MaxBytes: g.budget.Bytes}), g.budget}
	s, err := serve.New(context.Background(), src, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("listening on %s (model %s: n = %d, d = %d; backend %s)", ln.Addr(), *modelPath, s.Model().N(), s.Model().D(), blas.Backend())

	// Signals: SIGHUP reloads; the first SIGTERM or SIGINT ends stop (the
	// drain begins), the second skip (the rest of the drain delay).
	stop, drain := context.WithCancelCause(context.Background())
	skip, hurry := context.WithCancelCause(context.Background())
	defer drain(nil)
	defer hurry(nil)
	sigs := make(chan os.Signal, 4)
	unsubscribe := serveSignals(sigs)
	defer unsubscribe()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				switch {
				case sig == syscall.SIGHUP:
					_ = s.Reload(context.Background()) // logged; the old model stays
				case stop.Err() == nil:
					drain(signalCause{sig})
				default:
					hurry(signalCause{sig})
				}
			}
		}
	}()
	return serve.Run(stop, ln, s, serve.RunOptions{SkipDelay: skip})
}

// signalCause is a context's cause: the signal that ended it.
type signalCause struct{ os.Signal }

func (c signalCause) Error() string { return c.String() }

// budgetSource is a model Source whose refusals over the memory budget
// name the budget's source (--max-memory, NDPP_MAX_MEMORY).
type budgetSource struct {
	serve.Source
	budget memlimit.Budget
}

func (b budgetSource) Load(ctx context.Context) (*ndpp.Model, error) {
	m, err := b.Source.Load(ctx)
	return m, b.budget.Rename(err)
}
