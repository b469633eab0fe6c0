package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

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

// runServe serves until SIGTERM or SIGINT, then drains: /readyz answers
// 503 at once while the listener keeps accepting and serving for
// --drain-delay (so that load balancers see it and stop sending; a second
// SIGTERM or SIGINT skips the rest of the delay; responses then close
// their connection, so that clients reconnect to where the load balancer
// sends them); then the listener closes (http.Server.Shutdown) and the
// requests in flight finish or meet their deadlines. It returns nil
// when they have all answered, and an error naming how many were still
// running if they have not by --shutdown-timeout after the listener closed.
func runServe(e *env, args []string) error {
	var g globals
	lim := serve.DefaultLimits()
	fs := newFlagSet(e, "serve", "serve a model over HTTP with JSON: POST /v1/score, /v1/recommend, /v1/rerank; GET /v1/model, /healthz, /readyz, /metrics (Prometheus). Items are the model's tokens, as in basket files (JSON strings or integers). SIGHUP reloads the model file (a broken file keeps the old model). "+
		"/healthz is liveness: 200 while the process serves. /readyz answers 503 with a JSON reason while every --max-inflight slot has been busy without a break for --saturation-threshold, and from SIGTERM or SIGINT on; 200 otherwise. "+
		"SIGTERM or SIGINT drains: not ready at once, requests still accepted and served for --drain-delay (a second signal skips the rest of the delay), then the listener closes and the requests in flight finish; the exit status is 0 when they have all answered, 1 if some still run --shutdown-timeout after the listener closed.",
		"ndpp-bench serve --model M.npz --addr 127.0.0.1:8080", &g)
	modelPath := fs.String("model", "", "model file (.npz) (required)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "longest wait for requests in flight once the listener has closed at shutdown (longer than --max-rerank-timeout); past it serve exits 1")
	drainDelay := fs.Duration("drain-delay", 5*time.Second, "after SIGTERM or SIGINT, how long /readyz answers 503 while requests are still accepted and served, before the listener closes (0: close at once)")
	saturation := fs.Duration("saturation-threshold", serve.DefaultSaturationThreshold, "/readyz answers 503 once every --max-inflight slot has been busy this long without a break (0: as soon as all are busy)")
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
	if lim.MaxBody < 1 || lim.MaxCandidates < 1 || lim.MaxK < 1 || lim.MaxShown < 0 || lim.MaxItems < 1 ||
		lim.MaxBaskets < 1 || lim.MaxN < 1 || lim.MaxInflight < 1 {
		return usagef("limits must be ≥ 1 (--max-shown ≥ 0)")
	}
	if lim.RerankTimeout <= 0 || lim.MaxRerankTimeout < lim.RerankTimeout || lim.MaxPolishRatios < 1 ||
		lim.MaxPolishPool < 1 || lim.MaxPolishPool > rerank.MaxPolishPool {
		return usagef("want 0 < --rerank-timeout ≤ --max-rerank-timeout, --max-polish-ratios ≥ 1 and 1 ≤ --max-polish-pool ≤ %d", rerank.MaxPolishPool)
	}
	if *shutdown <= lim.MaxRerankTimeout {
		return usagef("--shutdown-timeout %v must be longer than --max-rerank-timeout %v (a request in flight at shutdown must be able to meet its deadline)", *shutdown, lim.MaxRerankTimeout)
	}
	if *drainDelay < 0 {
		return usagef("--drain-delay must be ≥ 0")
	}
	if *saturation < 0 {
		return usagef("--saturation-threshold must be ≥ 0")
	}
	logger := log.New(e.stderr, "ndpp-bench serve: ", log.LstdFlags)
	s, err := serve.New(context.Background(), budgetSource{serve.File(*modelPath, npz.LoadOptions{MaxBytes: g.budget.Bytes}), g.budget}, lim, logger)
	if err != nil {
		return err
	}
	s.SetSaturationThreshold(*saturation)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	logger.Printf("listening on %s (model %s: n = %d, d = %d; backend %s)", ln.Addr(), *modelPath, s.Model().N(), s.Model().D(), blas.Backend())
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, ErrorLog: logger}
	sigs := make(chan os.Signal, 4)
	stop := serveSignals(sigs)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// next returns the next signal other than SIGHUP (reloading on those);
	// or, with a nil signal, the error of the listener if it fails, or nil
	// when after fires first.
	next := func(after <-chan time.Time) (os.Signal, error) {
		for {
			select {
			case err := <-served:
				if err == nil {
					err = errors.New("the listener stopped")
				}
				return nil, err
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					if err := s.Reload(context.Background()); err != nil {
						logger.Printf("reload: keeping the model loaded at %s: %v", s.LoadedAt().Format(time.RFC3339), err)
					}
					continue
				}
				return sig, nil
			case <-after:
				return nil, nil
			}
		}
	}
	sig, err := next(nil)
	if sig == nil {
		return err
	}
	// Drain: not ready, still serving, until the delay is over or a
	// second signal.
	s.SetDraining()
	srv.SetKeepAlivesEnabled(false) // clients reconnect, to where the load balancer sends them
	logger.Printf("%v: not ready; still serving for --drain-delay %v", sig, *drainDelay)
	delay := time.NewTimer(*drainDelay)
	sig, err = next(delay.C)
	delay.Stop()
	if err != nil {
		return err
	}
	if sig != nil {
		logger.Printf("%v: skipping the rest of the drain delay", sig)
	}
	logger.Printf("closing the listener; finishing the %s in flight (at most --shutdown-timeout %v)", plural(s.Active(), "request"), *shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		running := s.Active()
		srv.Close()
		if running == 0 { // a client still sending its request line or headers
			return fmt.Errorf("shutdown: connections still open after --shutdown-timeout %v (no request being handled)", *shutdown)
		}
		return fmt.Errorf("shutdown: %s still running after --shutdown-timeout %v", plural(running, "request"), *shutdown)
	}
	logger.Printf("stopped")
	return nil
}

// plural writes "1 request", "2 requests".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

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
