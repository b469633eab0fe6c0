package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"mime"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/memlimit"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/rerank"
)

func init() {
	register(&command{
		name:    "serve",
		globals: gBackend | gMaxMem,
		summary: "JSON-over-HTTP service: score baskets, recommend next items, rerank candidates; Prometheus metrics, reload on SIGHUP",
		run:     runServe,
	})
}

// serveLimits bound what one request may ask for.
type serveLimits struct {
	maxBody       int64 // request body bytes
	maxCandidates int   // /v1/rerank candidates
	maxK          int   // /v1/rerank k
	maxShown      int   // /v1/rerank shown items
	maxItems      int   // items per basket (/v1/score, /v1/recommend)
	maxBaskets    int   // baskets per request
	maxN          int   // /v1/recommend n
	maxInflight   int   // requests computed at once (others wait)
	// budget is the memory budget of loading the model file (a zero
	// Budget: the machine's).
	budget memlimit.Budget

	// /v1/rerank's deadline and polish bounds.
	rerankTimeout    time.Duration // deadline of a request without timeout_ms
	maxRerankTimeout time.Duration // largest timeout_ms
	maxPolishRatios  int64         // largest polish_max_ratios, and its default
	maxPolishPool    int           // largest polish_pool
}

func defaultServeLimits() serveLimits {
	return serveLimits{maxBody: 1 << 20, maxCandidates: 2000, maxK: 100, maxShown: 100,
		maxItems: 100, maxBaskets: 256, maxN: 1000, maxInflight: 4 * runtime.GOMAXPROCS(0),
		// 250 ms: a rerank sits in a page's render path; the greedy of the
		// largest request the default limits allow (2000 candidates,
		// k = 100, d = 30) takes 5–35 ms on a loaded 2-core machine, so
		// the deadline leaves it a wide margin and gives the polish the
		// rest.
		rerankTimeout: 250 * time.Millisecond, maxRerankTimeout: 10 * time.Second,
		maxPolishRatios: rerank.DefaultPolishMaxRatios, maxPolishPool: rerank.MaxPolishPool}
}

// serveSignals subscribes c to the signals serve acts on and returns the
// function that unsubscribes it (tests replace it to send their own).
var serveSignals = func(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	return func() { signal.Stop(c) }
}

// defaultSaturationThreshold is how long every computing slot must have
// been busy before /readyz answers 503 (--saturation-threshold).
const defaultSaturationThreshold = time.Second

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
	lim := defaultServeLimits()
	fs := newFlagSet(e, "serve", "serve a model over HTTP with JSON: POST /v1/score, /v1/recommend, /v1/rerank; GET /v1/model, /healthz, /readyz, /metrics (Prometheus). Items are the model's tokens, as in basket files (JSON strings or integers). SIGHUP reloads the model file (a broken file keeps the old model). "+
		"/healthz is liveness: 200 while the process serves. /readyz answers 503 with a JSON reason while every --max-inflight slot has been busy without a break for --saturation-threshold, and from SIGTERM or SIGINT on; 200 otherwise. "+
		"SIGTERM or SIGINT drains: not ready at once, requests still accepted and served for --drain-delay (a second signal skips the rest of the delay), then the listener closes and the requests in flight finish; the exit status is 0 when they have all answered, 1 if some still run --shutdown-timeout after the listener closed.",
		"ndpp-bench serve --model M.npz --addr 127.0.0.1:8080", &g)
	modelPath := fs.String("model", "", "model file (.npz) (required)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "longest wait for requests in flight once the listener has closed at shutdown (longer than --max-rerank-timeout); past it serve exits 1")
	drainDelay := fs.Duration("drain-delay", 5*time.Second, "after SIGTERM or SIGINT, how long /readyz answers 503 while requests are still accepted and served, before the listener closes (0: close at once)")
	saturation := fs.Duration("saturation-threshold", defaultSaturationThreshold, "/readyz answers 503 once every --max-inflight slot has been busy this long without a break (0: as soon as all are busy)")
	fs.Int64Var(&lim.maxBody, "max-body", lim.maxBody, "largest request body in bytes")
	fs.IntVar(&lim.maxCandidates, "max-candidates", lim.maxCandidates, "most candidates in a /v1/rerank request")
	fs.IntVar(&lim.maxK, "max-k", lim.maxK, "largest k of /v1/rerank")
	fs.IntVar(&lim.maxShown, "max-shown", lim.maxShown, "most shown items in a /v1/rerank request")
	fs.IntVar(&lim.maxItems, "max-items", lim.maxItems, "most items in a basket (/v1/score, /v1/recommend)")
	fs.IntVar(&lim.maxBaskets, "max-baskets", lim.maxBaskets, "most baskets in a /v1/score or /v1/recommend request")
	fs.IntVar(&lim.maxN, "max-n", lim.maxN, "largest n of /v1/recommend")
	fs.IntVar(&lim.maxInflight, "max-inflight", lim.maxInflight, "requests computed at once; more wait for a slot")
	fs.DurationVar(&lim.rerankTimeout, "rerank-timeout", lim.rerankTimeout, "deadline of a /v1/rerank request without timeout_ms; past it the answer is degraded (see the response's degraded)")
	fs.DurationVar(&lim.maxRerankTimeout, "max-rerank-timeout", lim.maxRerankTimeout, "largest timeout_ms of a /v1/rerank request")
	fs.Int64Var(&lim.maxPolishRatios, "max-polish-ratios", lim.maxPolishRatios, "largest polish_max_ratios of /v1/rerank (determinant ratios of the polish), and its default")
	fs.IntVar(&lim.maxPolishPool, "max-polish-pool", lim.maxPolishPool, fmt.Sprintf("largest polish_pool of /v1/rerank (at most %d)", rerank.MaxPolishPool))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.apply(); err != nil {
		return err
	}
	lim.budget = g.budget
	if *modelPath == "" {
		return usagef("--model is required")
	}
	if err := checkFiles([]outfile.File{modelFile("--model", *modelPath)}, nil); err != nil {
		return err
	}
	if lim.maxBody < 1 || lim.maxCandidates < 1 || lim.maxK < 1 || lim.maxShown < 0 || lim.maxItems < 1 ||
		lim.maxBaskets < 1 || lim.maxN < 1 || lim.maxInflight < 1 {
		return usagef("limits must be ≥ 1 (--max-shown ≥ 0)")
	}
	if lim.rerankTimeout <= 0 || lim.maxRerankTimeout < lim.rerankTimeout || lim.maxPolishRatios < 1 ||
		lim.maxPolishPool < 1 || lim.maxPolishPool > rerank.MaxPolishPool {
		return usagef("want 0 < --rerank-timeout ≤ --max-rerank-timeout, --max-polish-ratios ≥ 1 and 1 ≤ --max-polish-pool ≤ %d", rerank.MaxPolishPool)
	}
	if *shutdown <= lim.maxRerankTimeout {
		return usagef("--shutdown-timeout %v must be longer than --max-rerank-timeout %v (a request in flight at shutdown must be able to meet its deadline)", *shutdown, lim.maxRerankTimeout)
	}
	if *drainDelay < 0 {
		return usagef("--drain-delay must be ≥ 0")
	}
	if *saturation < 0 {
		return usagef("--saturation-threshold must be ≥ 0")
	}
	logger := log.New(e.stderr, "ndpp-bench serve: ", log.LstdFlags)
	s, err := newServer(*modelPath, lim, logger)
	if err != nil {
		return err
	}
	s.saturation = *saturation
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	sm := s.model()
	logger.Printf("listening on %s (model %s: n = %d, d = %d; backend %s)", ln.Addr(), *modelPath, sm.m.N(), sm.m.D(), blas.Backend())
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
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
					if err := s.reload(); err != nil {
						logger.Printf("reload: keeping the model loaded at %s: %v", s.model().loaded.Format(time.RFC3339), err)
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
	s.draining.Store(true)
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
	logger.Printf("closing the listener; finishing the %s in flight (at most --shutdown-timeout %v)", plural(s.active.Load(), "request"), *shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		running := s.active.Load()
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

// servedModel is a loaded model and what requests need of it. It is
// immutable; a reload swaps in a new one.
type servedModel struct {
	m       *ndpp.Model
	names   string            // "vocabulary", "ids" or "rows"
	tokJSON []json.RawMessage // the JSON of each row's token
	logNorm float64
	path    string
	loaded  time.Time
	gains   sync.Pool // *[][]float64, recBatch rows of n gains
}

func loadServed(path string, budget memlimit.Budget) (*servedModel, error) {
	m, err := loadModel(path, budget)
	if err != nil {
		return nil, err
	}
	sm := &servedModel{m: m, path: path, loaded: time.Now()}
	sm.logNorm = m.LogNormalizer()
	if math.IsNaN(sm.logNorm) || math.IsInf(sm.logNorm, 0) {
		return nil, fmt.Errorf("%s: the normaliser log det(I + L) is %v", path, sm.logNorm)
	}
	// Items are answered with the type the model names them by: integer
	// ids and rows as JSON numbers, vocabulary tokens as strings.
	sm.tokJSON = make([]json.RawMessage, m.N())
	switch {
	case !m.IntItems():
		sm.names = "vocabulary"
	case m.IDs() != nil:
		sm.names = "ids"
	default:
		sm.names = "rows"
	}
	for i := range sm.tokJSON {
		if id, ok := m.ID(i); ok {
			sm.tokJSON[i] = strconv.AppendInt(nil, id, 10)
		} else {
			sm.tokJSON[i], _ = json.Marshal(m.Token(i))
		}
	}
	n := m.N()
	sm.gains.New = func() any {
		g := make([][]float64, recBatch)
		for i := range g {
			g[i] = make([]float64, n)
		}
		return &g
	}
	return sm, nil
}

// server holds the current model, the limits and the metrics.
type server struct {
	cur     atomic.Pointer[servedModel]
	path    string
	lim     serveLimits
	log     *log.Logger
	ws      sync.Pool // *rerank.Workspace
	reloads atomic.Int64

	// Readiness: not ready once draining (SIGTERM, SIGINT) or while every
	// slot has been busy for saturation.
	slots      *slotPool
	saturation time.Duration
	draining   atomic.Bool
	active     atomic.Int64 // API requests being handled (waiting for a slot or computing)

	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	reloadsC *prometheus.CounterVec
	items    prometheus.Gauge
	degraded *prometheus.CounterVec // /v1/rerank answers by Degraded kind

	// hook, when set (tests), runs in each API request after the model is
	// taken and before it is used.
	hook func(endpoint string)
}

func newServer(path string, lim serveLimits, logger *log.Logger) (*server, error) {
	sm, err := loadServed(path, lim.budget)
	if err != nil {
		return nil, err
	}
	s := &server{path: path, lim: lim, log: logger, slots: newSlotPool(lim.maxInflight), saturation: defaultSaturationThreshold,
		reg: prometheus.NewRegistry()}
	s.ws.New = func() any { return new(rerank.Workspace) }
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndpp_serve_requests_total",
		Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ndpp_serve_request_duration_seconds",
		Help:    "Time from the request's arrival at the handler to its response, by endpoint.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18)}, []string{"endpoint"})
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_inflight_requests",
		Help: "API requests being handled (waiting for a slot or computing)."}, func() float64 { return float64(s.active.Load()) })
	slotsBusy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_slots_busy",
		Help: "Computing slots taken (at most --max-inflight)."}, func() float64 { busy, _, _ := s.slots.state(); return float64(busy) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_slot_waiting_requests",
		Help: "API requests waiting for a computing slot."}, func() float64 { _, w, _ := s.slots.state(); return float64(w) })
	saturated := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_saturated_seconds",
		Help: "Time since every computing slot has been busy without a break (0 while one is free)."},
		func() float64 { _, _, d := s.slots.state(); return d.Seconds() })
	ready := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_ready",
		Help: "1 while /readyz answers 200, 0 while it answers 503 (saturated or draining)."}, func() float64 {
		if ok, _ := s.readiness(); ok {
			return 1
		}
		return 0
	})
	s.reloadsC = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndpp_serve_model_reloads_total",
		Help: "Model reloads (SIGHUP) by result: ok or error (the old model is kept)."}, []string{"result"})
	s.items = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ndpp_serve_model_items", Help: "Items in the model served."})
	s.reg.MustRegister(s.requests, s.latency, inflight, slotsBusy, waiting, saturated, ready, s.reloadsC, s.items,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndpp_serve_rerank_degraded_total",
		Help: "/v1/rerank answers degraded at their deadline, by kind: polish_deadline (the polish's best set so far) or greedy_deadline (relevance order)."}, []string{"kind"})
	s.reg.MustRegister(s.degraded)
	s.degraded.WithLabelValues(rerank.DegradedPolish)
	s.degraded.WithLabelValues(rerank.DegradedGreedy)
	s.reloadsC.WithLabelValues("ok")
	s.reloadsC.WithLabelValues("error")
	s.cur.Store(sm)
	s.items.Set(float64(sm.m.N()))
	return s, nil
}

func (s *server) model() *servedModel { return s.cur.Load() }

// readyBody is the JSON of /readyz.
type readyBody struct {
	Status           string  `json:"status"` // "ready", "draining" or "saturated"
	Reason           string  `json:"reason,omitempty"`
	SaturatedSeconds float64 `json:"saturated_seconds,omitempty"`
}

// readiness says whether the server should be sent new requests: not
// while draining, nor while every slot has been busy without a break for
// s.saturation or longer.
func (s *server) readiness() (bool, readyBody) {
	if s.draining.Load() {
		return false, readyBody{Status: "draining", Reason: "shutting down: finishing the requests in flight"}
	}
	busy, waiting, d := s.slots.state()
	if busy == s.slots.size && d >= s.saturation {
		return false, readyBody{Status: "saturated", SaturatedSeconds: d.Seconds(),
			Reason: fmt.Sprintf("every computing slot (%d, --max-inflight) busy for %v, at least --saturation-threshold %v; %s waiting",
				busy, d.Round(time.Millisecond), s.saturation, plural(int64(waiting), "request"))}
	}
	return true, readyBody{Status: "ready"}
}

// reload reads the model file again and swaps it in; requests that have
// taken the old model finish with it. On error the old model stays.
func (s *server) reload() error {
	sm, err := loadServed(s.path, s.lim.budget)
	if err != nil {
		s.reloadsC.WithLabelValues("error").Inc()
		return err
	}
	s.cur.Store(sm)
	s.reloads.Add(1)
	s.reloadsC.WithLabelValues("ok").Inc()
	s.items.Set(float64(sm.m.N()))
	s.log.Printf("reloaded %s: n = %d, d = %d", s.path, sm.m.N(), sm.m.D())
	return nil
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/score", s.api("score", s.score))
	mux.Handle("/v1/recommend", s.api("recommend", s.recommend))
	mux.Handle("/v1/rerank", s.api("rerank", s.rerank))
	mux.Handle("/v1/model", s.get("model", func(w http.ResponseWriter) int { return writeJSON(w, http.StatusOK, s.modelInfo()) }))
	mux.Handle("/healthz", s.get("healthz", func(w http.ResponseWriter) int {
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.Handle("/readyz", s.get("readyz", func(w http.ResponseWriter) int {
		if ok, body := s.readiness(); !ok {
			return writeJSON(w, http.StatusServiceUnavailable, body)
		}
		return writeJSON(w, http.StatusOK, readyBody{Status: "ready"})
	}))
	metrics := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: s.log})
	mux.Handle("/metrics", metrics)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := writeError(w, &apiError{code: http.StatusNotFound, field: "path", msg: fmt.Sprintf("no endpoint %q (POST /v1/score, /v1/recommend, /v1/rerank; GET /v1/model, /healthz, /readyz, /metrics)", truncate(r.URL.Path))})
		s.observe("other", code, start)
	}))
	return mux
}

// apiError is a response with a 4xx or 5xx status and a JSON body
// {"error": msg, "field": field}.
type apiError struct {
	code  int
	field string
	msg   string
}

func badField(field, format string, args ...any) *apiError {
	return &apiError{code: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, e *apiError) int {
	msg := e.msg
	if e.field != "" {
		msg = e.field + ": " + msg
	}
	return writeJSON(w, e.code, errorBody{Error: msg, Field: e.field})
}

func writeJSON(w http.ResponseWriter, code int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "encoding the response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
	return code
}

// get wraps a GET endpoint with metrics.
func (s *server) get(endpoint string, f func(w http.ResponseWriter) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var code int
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			code = writeError(w, &apiError{code: http.StatusMethodNotAllowed, field: "method", msg: r.Method + " not allowed; use GET"})
		} else {
			code = f(w)
		}
		s.observe(endpoint, code, start)
	})
}

// arrivalKey is the request context's key of the time the request
// arrived (set by api): deadlines count from it, so that time spent
// reading the body and waiting for a computing slot is part of them.
type arrivalKey struct{}

// arrival returns the time the request of ctx arrived (now if unknown).
func arrival(ctx context.Context) time.Time {
	if t, ok := ctx.Value(arrivalKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

func (s *server) observe(endpoint string, code int, start time.Time) {
	s.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	s.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
}

// api wraps a POST endpoint: method and content type, the body limit, a
// computing slot, the current model, panics (500, logged), metrics.
func (s *server) api(endpoint string, f func(sm *servedModel, r *http.Request) (any, *apiError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.active.Add(1)
		defer s.active.Add(-1)
		r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, start))
		code := s.serveAPI(endpoint, f, w, r)
		s.observe(endpoint, code, start)
	})
}

func (s *server) serveAPI(endpoint string, f func(*servedModel, *http.Request) (any, *apiError), w http.ResponseWriter, r *http.Request) (code int) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return writeError(w, &apiError{code: http.StatusMethodNotAllowed, field: "method", msg: r.Method + " not allowed; use POST"})
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return writeError(w, &apiError{code: http.StatusUnsupportedMediaType, field: "Content-Type",
			msg: fmt.Sprintf("%q; want application/json", r.Header.Get("Content-Type"))})
	}
	// The body is read before a computing slot is taken, so that slow
	// clients hold none.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.lim.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return writeError(w, &apiError{code: http.StatusRequestEntityTooLarge, field: "body", msg: fmt.Sprintf("larger than %d bytes (--max-body)", mbe.Limit)})
		}
		return writeError(w, badField("body", "reading: %v", err))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if s.slots.acquire(r.Context()) != nil {
		return writeError(w, &apiError{code: http.StatusServiceUnavailable, msg: "request cancelled while waiting for a slot"})
	}
	defer s.slots.release()
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic in %s: %v", endpoint, p)
			code = writeError(w, &apiError{code: http.StatusInternalServerError, msg: "internal error"})
		}
	}()
	sm := s.model()
	if s.hook != nil {
		s.hook(endpoint)
	}
	out, aerr := f(sm, r)
	if aerr != nil {
		return writeError(w, aerr)
	}
	return writeJSON(w, http.StatusOK, out)
}

// decodeBody decodes one JSON object from the body into dst (a pointer to
// a struct), exactly: field names match the struct's json names
// case-sensitively, a field given twice, an unknown field and trailing data
// are refused, with errors that name the field and echo no more than a few
// bytes of a value.
func decodeBody(r *http.Request, dst any) *apiError {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return badField("body", "reading: %v", err)
	}
	if aerr := checkKeys(body, dst); aerr != nil {
		return aerr
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return badField("body", "data after the JSON object")
		}
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return badField("body", "empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badField("body", "truncated JSON")
	case errors.As(err, &se):
		return badField("body", "invalid JSON at byte %d: %s", se.Offset, truncate(se.Error()))
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return badField(jsonPath(field), "got a JSON %s, want %s", truncate(te.Value), jsonType(te.Type.String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return badField(truncate(name), "unknown field")
	}
	return badField("body", "%s", truncate(err.Error()))
}

// checkKeys refuses, in a body that is a JSON object, a key that is not
// exactly one of the json names of dst's struct fields (encoding/json
// would match it case-insensitively) and a key given twice (encoding/json
// would keep the last), in nested objects of struct fields too (e.g.
// new_items[2].V). Values that do not have the shape of their field are
// left to the decoder's own errors.
func checkKeys(body []byte, dst any) *apiError {
	return checkObject(body, reflect.TypeOf(dst), "")
}

// checkObject checks the keys of the JSON object raw against the struct
// type t (through pointers); path names raw in errors ("" for the body).
func checkObject(raw []byte, t reflect.Type, path string) *apiError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	fields := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			fields[name] = t.Field(i).Type
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil
		}
		name := truncate(key)
		if path != "" {
			name = path + "." + name
		}
		ft, known := fields[key]
		switch {
		case seen[key]:
			return badField(name, "given twice")
		case !known:
			for n := range fields {
				if strings.EqualFold(n, key) {
					return badField(name, "unknown field (field names are case-sensitive: %q)", n)
				}
			}
			return badField(name, "unknown field")
		}
		seen[key] = true
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil
		}
		if aerr := checkValue(val, ft, name); aerr != nil {
			return aerr
		}
	}
	return nil
}

// holdsStruct reports whether values of t are, or are slices or arrays of,
// structs (through pointers).
func holdsStruct(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
		case reflect.Struct:
			return true
		default:
			return false
		}
	}
}

// checkValue checks the objects inside the JSON value raw of a field of
// type t: a struct, or a slice or array of them.
func checkValue(raw []byte, t reflect.Type, path string) *apiError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkObject(raw, t, path)
	case reflect.Slice, reflect.Array:
		if !holdsStruct(t.Elem()) {
			return nil // no object to check: the value is not parsed again
		}
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if aerr := checkValue(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); aerr != nil {
				return aerr
			}
		}
	}
	return nil
}

// jsonPath writes the decoder's field path "baskets.2.3" as "baskets[2][3]".
func jsonPath(p string) string {
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, s := range parts {
		if _, err := strconv.Atoi(s); err == nil && i > 0 {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "int":
		return "an integer"
	case goType == "float64":
		return "a number"
	case goType == "string":
		return "a string"
	}
	return "an object"
}

// rows maps the JSON items of a list to the model's rows (Model.Row):
// JSON strings are tokens, JSON integers their decimal text. Unknown items
// and repeats are errors naming field[i].
func (sm *servedModel) rows(field string, items []json.RawMessage, dst []int) ([]int, *apiError) {
	dst = dst[:0]
	var seen map[int]int
	if len(items) > 32 {
		seen = make(map[int]int, len(items))
	}
	for i, raw := range items {
		f := func() string { return fmt.Sprintf("%s[%d]", field, i) }
		tok, ok := itemText(raw)
		if !ok {
			return nil, badField(f(), "%s is not an item (a JSON string or integer)", truncate(string(raw)))
		}
		row, known := sm.tokenRow(tok)
		if !known {
			return nil, badField(f(), "unknown item %q", truncate(tok))
		}
		if seen != nil {
			if j, dup := seen[row]; dup {
				return nil, badField(f(), "item %q repeats %s[%d]", tok, field, j)
			}
			seen[row] = i
		} else {
			for j, r := range dst {
				if r == row {
					return nil, badField(f(), "item %q repeats %s[%d]", tok, field, j)
				}
			}
		}
		dst = append(dst, row)
	}
	return dst, nil
}

// tokenRow returns the model row of an item token (Model.Row: a
// vocabulary token, else the decimal text of an id or of a row).
func (sm *servedModel) tokenRow(tok string) (int, bool) { return sm.m.Row(tok) }

// itemText returns the token of a JSON string or integer.
func itemText(raw json.RawMessage) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	s := string(raw)
	if s == "" || strings.ContainsAny(s, ".eE") || s == "null" || s == "true" || s == "false" || s[0] == '[' || s[0] == '{' {
		return "", false
	}
	return s, true
}

// truncate shortens a value echoed in an error to at most 40 bytes (cut
// at a character boundary, "..." added).
func truncate(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 37
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

type scoreRequest struct {
	Baskets [][]json.RawMessage `json:"baskets"`
}

type scoreResponse struct {
	LogLikelihoods []*float64 `json:"log_likelihoods"` // null when det L_S = 0
}

// baskets maps the baskets of a request (field name), each non-empty
// unless allowEmpty; single names the one basket field itself.
func (s *server) baskets(sm *servedModel, field string, in [][]json.RawMessage, allowEmpty, single bool) ([][]int, *apiError) {
	if len(in) > s.lim.maxBaskets {
		return nil, badField(field, "%d baskets; at most %d (--max-baskets)", len(in), s.lim.maxBaskets)
	}
	out := make([][]int, len(in))
	for b, items := range in {
		f := field
		if !single {
			f = fmt.Sprintf("%s[%d]", field, b)
		}
		if len(items) == 0 && !allowEmpty {
			return nil, badField(f, "empty basket")
		}
		if len(items) > s.lim.maxItems {
			return nil, badField(f, "%d items; at most %d (--max-items)", len(items), s.lim.maxItems)
		}
		rows, aerr := sm.rows(f, items, make([]int, 0, len(items)))
		if aerr != nil {
			return nil, aerr
		}
		out[b] = rows
	}
	return out, nil
}

func (s *server) score(sm *servedModel, r *http.Request) (any, *apiError) {
	var req scoreRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	if req.Baskets == nil {
		return nil, badField("baskets", "missing")
	}
	bs, aerr := s.baskets(sm, "baskets", req.Baskets, false, false)
	if aerr != nil {
		return nil, aerr
	}
	lds, err := sm.m.LogDets(bs, 1)
	if err != nil {
		return nil, badField("baskets", "%v", err)
	}
	out := scoreResponse{LogLikelihoods: make([]*float64, len(lds))}
	for i, ld := range lds {
		if ll := ld - sm.logNorm; !math.IsInf(ll, -1) {
			out.LogLikelihoods[i] = &ll
		}
	}
	return out, nil
}

type recommendRequest struct {
	Basket  []json.RawMessage   `json:"basket"`
	Baskets [][]json.RawMessage `json:"baskets"`
	N       *int                `json:"n"`
}

type recommendation struct {
	Items  []json.RawMessage `json:"items"`
	Scores []float64         `json:"scores"`
	Error  string            `json:"error,omitempty"`
}

type recommendBatch struct {
	Results []recommendation `json:"results"`
}

// recBatch is the number of baskets of a request whose gains are computed
// together (the rows of gains given to ndpp.Model.RecommendBatch).
const recBatch = ndpp.RecommendBatchSize

func (s *server) recommend(sm *servedModel, r *http.Request) (any, *apiError) {
	var req recommendRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	single := req.Basket != nil
	switch {
	case single && req.Baskets != nil:
		return nil, badField("baskets", "give basket or baskets, not both")
	case !single && req.Baskets == nil:
		return nil, badField("basket", "missing (or baskets, a list of baskets)")
	}
	n := min(10, s.lim.maxN, sm.m.N())
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > s.lim.maxN || n > sm.m.N() {
		return nil, badField("n", "%d; want 1 ≤ n ≤ %d", n, min(s.lim.maxN, sm.m.N()))
	}
	in, field := req.Baskets, "baskets"
	if single {
		in, field = [][]json.RawMessage{req.Basket}, "basket"
	}
	bs, aerr := s.baskets(sm, field, in, true, single)
	if aerr != nil {
		return nil, aerr
	}
	gp := sm.gains.Get().(*[][]float64)
	defer sm.gains.Put(gp)
	recs, errs, err := sm.m.RecommendBatch(r.Context(), bs, n, ndpp.RecommendOptions{Gains: *gp})
	if err != nil {
		if r.Context().Err() != nil {
			return nil, &apiError{code: http.StatusServiceUnavailable, msg: "request cancelled"}
		}
		panic(err) // n and the gains' rows are sized by the server
	}
	out := make([]recommendation, len(bs))
	for i := range bs {
		rec := recommendation{Items: []json.RawMessage{}, Scores: []float64{}}
		if err := errs[i]; err != nil {
			if single && errors.Is(err, ndpp.ErrSingularCondition) {
				return nil, &apiError{code: http.StatusUnprocessableEntity, field: "basket", msg: "det L_basket is zero under the numerical zero rule: no next-item gains"}
			}
			rec.Error = err.Error()
		} else {
			for _, rc := range recs[i] {
				rec.Items = append(rec.Items, sm.tokJSON[rc.Item])
				rec.Scores = append(rec.Scores, rc.Gain)
			}
		}
		out[i] = rec
	}
	if single {
		return out[0], nil
	}
	return recommendBatch{Results: out}, nil
}

type rerankRequest struct {
	Candidates []json.RawMessage `json:"candidates"`
	K          *int              `json:"k"`
	Quality    []json.RawMessage `json:"quality"`
	Relevance  []float64         `json:"relevance"` // with theta: rerank.Request.Relevance
	Theta      float64           `json:"theta"`
	// Attributes and ShownAttributes: per name, one value (a string or
	// an integer) per candidate / shown item; Constraints over them.
	Attributes      map[string][]json.RawMessage `json:"attributes"`
	ShownAttributes map[string][]json.RawMessage `json:"shown_attributes"`
	Constraints     []rerank.Constraint          `json:"constraints"`
	// NewItems are items outside the model that candidates may name.
	NewItems        []rerankNewItem   `json:"new_items"`
	Shown           []json.RawMessage `json:"shown"`
	Window          int               `json:"window"`
	Polish          bool              `json:"polish"`
	PolishEps       float64           `json:"polish_eps"`
	PolishPool      int               `json:"polish_pool"`
	PolishMaxRatios int64             `json:"polish_max_ratios"` // 0: --max-polish-ratios
	// TimeoutMs is the request's deadline in milliseconds (absent or 0:
	// --rerank-timeout; at most --max-rerank-timeout).
	TimeoutMs int64 `json:"timeout_ms"`
	// Degrade (default true) answers at the deadline with the best result
	// reached and "degraded" set; false answers 503 instead.
	Degrade *bool `json:"degrade"`
}

// rerankNewItem is an item given by its vectors: an id like the model's
// items (a string or an integer, not one of the model's), v, b (absent for
// a model with B = V) and δ (absent or 0 without a diagonal).
type rerankNewItem struct {
	ID    json.RawMessage `json:"id"`
	V     []float64       `json:"v"`
	B     []float64       `json:"b"`
	Delta float64         `json:"delta"`
}

type rerankResponse struct {
	Items        []json.RawMessage `json:"items"`
	Gains        []float64         `json:"gains"`
	LogValue     *float64          `json:"log_value,omitempty"` // absent without gains (theta 1, greedy_deadline)
	ShortReason  string            `json:"short_reason,omitempty"`
	PolishSwaps  int               `json:"polish_swaps,omitempty"`
	PolishCapped bool              `json:"polish_capped,omitempty"`
	Degraded     string            `json:"degraded,omitempty"`
}

func (s *server) rerank(sm *servedModel, r *http.Request) (any, *apiError) {
	var req rerankRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	switch {
	case len(req.Candidates) == 0:
		return nil, badField("candidates", "missing or empty")
	case len(req.Candidates) > s.lim.maxCandidates:
		return nil, badField("candidates", "%d candidates; at most %d (--max-candidates)", len(req.Candidates), s.lim.maxCandidates)
	case req.K == nil:
		return nil, badField("k", "missing")
	case *req.K < 1 || *req.K > len(req.Candidates) || *req.K > s.lim.maxK:
		return nil, badField("k", "%d; want 1 ≤ k ≤ %d (the candidates, at most --max-k)", *req.K, min(len(req.Candidates), s.lim.maxK))
	case len(req.Shown) > s.lim.maxShown:
		return nil, badField("shown", "%d items; at most %d (--max-shown)", len(req.Shown), s.lim.maxShown)
	case req.Window < 0:
		return nil, badField("window", "%d; want ≥ 0 (0: no window)", req.Window)
	case req.Quality != nil && len(req.Quality) != len(req.Candidates):
		return nil, badField("quality", "%d scores for %d candidates", len(req.Quality), len(req.Candidates))
	case req.TimeoutMs < 0 || time.Duration(req.TimeoutMs) > s.lim.maxRerankTimeout/time.Millisecond:
		return nil, badField("timeout_ms", "%d; want 0 ≤ timeout_ms ≤ %d (0: %d, --rerank-timeout; at most --max-rerank-timeout)",
			req.TimeoutMs, s.lim.maxRerankTimeout.Milliseconds(), s.lim.rerankTimeout.Milliseconds())
	case req.PolishMaxRatios < 0 || req.PolishMaxRatios > s.lim.maxPolishRatios:
		return nil, badField("polish_max_ratios", "%d; want 0 ≤ polish_max_ratios ≤ %d (0: the largest, --max-polish-ratios)", req.PolishMaxRatios, s.lim.maxPolishRatios)
	case req.PolishPool > s.lim.maxPolishPool:
		return nil, badField("polish_pool", "%d; want 0 ≤ polish_pool ≤ %d (--max-polish-pool)", req.PolishPool, s.lim.maxPolishPool)
	}
	rq := rerank.Request{K: *req.K, Window: req.Window, Polish: req.Polish, PolishEps: req.PolishEps, PolishPool: req.PolishPool,
		PolishMaxRatios: req.PolishMaxRatios, Degrade: req.Degrade == nil || *req.Degrade, Relevance: req.Relevance, Theta: req.Theta}
	if rq.PolishMaxRatios == 0 {
		rq.PolishMaxRatios = s.lim.maxPolishRatios
	}
	var aerr *apiError
	if rq.Attributes, aerr = attributeValues("attributes", req.Attributes); aerr != nil {
		return nil, aerr
	}
	if rq.ShownAttributes, aerr = attributeValues("shown_attributes", req.ShownAttributes); aerr != nil {
		return nil, aerr
	}
	rq.Constraints = req.Constraints
	timeout := s.lim.rerankTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	var newTok map[string]int // new item token → its id in rq (n + index)
	if len(req.NewItems) > 0 {
		n := sm.m.N()
		newTok = make(map[string]int, len(req.NewItems))
		rq.NewItems = make([]ndpp.Item, len(req.NewItems))
		for i, ni := range req.NewItems {
			f := fmt.Sprintf("new_items[%d].id", i)
			tok, ok := itemText(ni.ID)
			if !ok {
				return nil, badField(f, "%s is not an item id (a JSON string or integer)", truncate(string(ni.ID)))
			}
			if _, clash := sm.tokenRow(tok); clash {
				return nil, badField(f, "%q is one of the model's items", truncate(tok))
			}
			if j, dup := newTok[tok]; dup {
				return nil, badField(f, "%q repeats new_items[%d]", truncate(tok), j-n)
			}
			newTok[tok] = n + i
			rq.NewItems[i] = ndpp.Item{ID: n + i, V: ni.V, B: ni.B, Delta: ni.Delta}
		}
		rq.Candidates = make([]int, len(req.Candidates))
		for i, raw := range req.Candidates {
			tok, ok := itemText(raw)
			if !ok {
				return nil, badField(fmt.Sprintf("candidates[%d]", i), "%s is not an item (a JSON string or integer)", truncate(string(raw)))
			}
			if id, isNew := newTok[tok]; isNew {
				rq.Candidates[i] = id
			} else if row, known := sm.tokenRow(tok); known {
				rq.Candidates[i] = row
			} else {
				return nil, badField(fmt.Sprintf("candidates[%d]", i), "unknown item %q", truncate(tok))
			}
		}
	} else if rq.Candidates, aerr = sm.rows("candidates", req.Candidates, nil); aerr != nil {
		return nil, aerr
	}
	if rq.Shown, aerr = sm.rows("shown", req.Shown, nil); aerr != nil {
		return nil, aerr
	}
	if req.Quality != nil {
		rq.Quality = make([]float64, len(req.Quality))
		for i, raw := range req.Quality {
			if len(raw) > 0 && raw[0] == '"' {
				var str string
				_ = json.Unmarshal(raw, &str)
				return nil, badField(fmt.Sprintf("quality[%d]", i), "%q is a string; want a finite number ≥ 0", truncate(str))
			}
			q, err := strconv.ParseFloat(string(raw), 64)
			if err != nil || !(q >= 0) || math.IsInf(q, 0) {
				return nil, badField(fmt.Sprintf("quality[%d]", i), "%s; want a finite number ≥ 0", truncate(string(raw)))
			}
			rq.Quality[i] = q
		}
	}
	// The client's context (a client that goes away stops the work) with
	// the request's deadline, counted from its arrival: a request that
	// waited for a slot past it is answered in relevance order at once
	// ("greedy_deadline").
	ctx, cancel := context.WithDeadline(r.Context(), arrival(r.Context()).Add(timeout))
	defer cancel()
	ws := s.ws.Get().(*rerank.Workspace)
	defer s.ws.Put(ws)
	res, err := ws.Rerank(ctx, sm.m, rq)
	if err != nil {
		var re *rerank.RequestError
		switch {
		case errors.As(err, &re):
			f := re.Field
			if re.Index >= 0 {
				f = fmt.Sprintf("%s[%d]", re.Field, re.Index)
			}
			return nil, badField(f, "%s", re.Reason)
		case errors.Is(err, context.DeadlineExceeded):
			return nil, &apiError{code: http.StatusServiceUnavailable, field: "timeout_ms",
				msg: fmt.Sprintf("not done within %v and degrade is false", timeout)}
		case errors.Is(err, context.Canceled):
			return nil, &apiError{code: http.StatusServiceUnavailable, msg: "request cancelled"}
		}
		return nil, &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	if res.Degraded != "" {
		s.degraded.WithLabelValues(res.Degraded).Inc()
	}
	out := rerankResponse{Items: make([]json.RawMessage, len(res.Items)), Gains: append([]float64{}, res.Gains...), PolishSwaps: res.PolishSwaps,
		PolishCapped: res.PolishCapped, Degraded: res.Degraded, ShortReason: res.Short}
	if len(res.Gains) > 0 {
		out.LogValue = &res.LogValue
	}
	for i, it := range res.Items {
		if it >= sm.m.N() {
			out.Items[i] = req.NewItems[it-sm.m.N()].ID
		} else {
			out.Items[i] = sm.tokJSON[it]
		}
	}
	return out, nil
}

// attributeValues turns JSON attribute values (strings or integers) into
// the strings rerank compares: a string s as "s" + s, an integer as "i" +
// its decimal digits (so that "3" and 3 differ).
func attributeValues(field string, in map[string][]json.RawMessage) (map[string][]string, *apiError) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string][]string, len(in))
	for name, raws := range in {
		vals := make([]string, len(raws))
		for i, raw := range raws {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				vals[i] = "s" + str
				continue
			}
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, badField(fmt.Sprintf("%s.%s[%d]", field, name, i), "%s; want a string or an integer", truncate(string(raw)))
			}
			vals[i] = "i" + strconv.FormatInt(n, 10)
		}
		out[name] = vals
	}
	return out, nil
}

type modelInfo struct {
	File          string  `json:"file"`
	Items         int     `json:"items"`
	D             int     `json:"d"`
	Shared        bool    `json:"shared"`
	Diagonal      bool    `json:"diagonal"`
	MaxRank       int     `json:"max_rank"`
	ItemNames     string  `json:"item_names"`
	LogNormalizer float64 `json:"log_normalizer"`
	LoadedAt      string  `json:"loaded_at"`
	Reloads       int64   `json:"reloads"`
	Backend       string  `json:"backend"`
}

func (s *server) modelInfo() modelInfo {
	sm := s.model()
	return modelInfo{File: sm.path, Items: sm.m.N(), D: sm.m.D(), Shared: sm.m.Shared(), Diagonal: sm.m.HasDiag(),
		MaxRank: sm.m.MaxRank(), ItemNames: sm.names, LogNormalizer: sm.logNorm,
		LoadedAt: sm.loaded.UTC().Format(time.RFC3339Nano), Reloads: s.reloads.Load(), Backend: blas.Backend()}
}
