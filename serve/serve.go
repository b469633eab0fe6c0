package serve

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
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/jsonitem"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/rerank"
)

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
	name    string // Source.Name
	loaded  time.Time
	gains   sync.Pool // *[][]float64, recBatch rows of n gains
}

// loadServed loads the model of src and prepares what requests need of
// it. A model whose kernel overflows float64 (ndpp.Model.CheckScale) or
// whose normaliser is not finite is refused: its answers would be NaN or
// infinite.
func loadServed(ctx context.Context, src Source) (*servedModel, error) {
	m, err := src.Load(ctx)
	if err != nil {
		return nil, err
	}
	name := src.Name()
	if m == nil {
		return nil, fmt.Errorf("%s: no model", name)
	}
	if err := m.CheckScale(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sm := &servedModel{m: m, name: name, loaded: time.Now()}
	sm.logNorm = m.LogNormalizer()
	if math.IsNaN(sm.logNorm) || math.IsInf(sm.logNorm, 0) {
		return nil, fmt.Errorf("%s: the normaliser log det(I + L) is %v", name, sm.logNorm)
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

// Handler is the HTTP service over a model: it holds the current model,
// the limits and the metrics, and serves the endpoints (see ServeHTTP).
type Handler struct {
	mux     http.Handler
	cur     atomic.Pointer[servedModel]
	src     Source
	opts    Options
	lim     Limits
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

	// hook, when set (tests), runs in each API request once it holds a
	// computing slot, before it computes.
	hook func(r *http.Request)
}

// New loads the model of src and returns the service over it, configured
// by o (which must pass Options.Check).
func New(ctx context.Context, src Source, o Options) (*Handler, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	sm, err := loadServed(ctx, src)
	if err != nil {
		return nil, err
	}
	s := &Handler{src: src, opts: o, lim: o.Limits, log: logger, slots: newSlotPool(o.Limits.MaxInflight), saturation: o.SaturationThreshold,
		reg: prometheus.NewRegistry()}
	s.ws.New = func() any { return new(rerank.Workspace) }
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndpp_serve_requests_total",
		Help: "HTTP requests by endpoint and status code; 499: the client went away before the answer."}, []string{"endpoint", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ndpp_serve_request_duration_seconds",
		Help:    "Time from the request's arrival at the handler to its response, by endpoint.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18)}, []string{"endpoint"})
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_inflight_requests",
		Help: "API requests being handled (waiting for a slot or computing)."}, func() float64 { return float64(s.active.Load()) })
	slotsBusy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_slots_busy",
		Help: "Computing slots taken (at most --max-inflight)."}, func() float64 { busy, _, _, _ := s.slots.state(); return float64(busy) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_slot_waiting_requests",
		Help: "API requests waiting for a computing slot."}, func() float64 { _, w, _, _ := s.slots.state(); return float64(w) })
	saturated := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ndpp_serve_saturated_seconds",
		Help: "Time since every computing slot has been busy without a break (0 while one is free)."},
		func() float64 { _, _, _, d := s.slots.state(); return d.Seconds() })
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
		Help: "/v1/rerank answers degraded at their deadline, by kind: polish_deadline (the polish's best set so far), greedy_deadline or sample_deadline (relevance order) or slot_deadline (relevance order: the deadline passed while waiting for a computing slot)."}, []string{"kind"})
	s.reg.MustRegister(s.degraded)
	s.degraded.WithLabelValues(rerank.DegradedPolish)
	s.degraded.WithLabelValues(rerank.DegradedGreedy)
	s.degraded.WithLabelValues(rerank.DegradedSample)
	s.degraded.WithLabelValues(DegradedSlot)
	s.reloadsC.WithLabelValues("ok")
	s.reloadsC.WithLabelValues("error")
	s.cur.Store(sm)
	s.items.Set(float64(sm.m.N()))
	s.mux = s.handler()
	return s, nil
}

// ServeHTTP serves POST /v1/score, /v1/recommend, /v1/rerank and GET
// /v1/model, /healthz, /readyz, /metrics.
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Handler) model() *servedModel { return s.cur.Load() }

// Model returns the model being served.
func (s *Handler) Model() *ndpp.Model { return s.model().m }

// readyBody is the JSON of /readyz.
type readyBody struct {
	Status           string  `json:"status"` // "ready", "draining" or "saturated"
	Reason           string  `json:"reason,omitempty"`
	SaturatedSeconds float64 `json:"saturated_seconds,omitempty"`
}

// readiness says whether the server should be sent new requests: not
// while draining, nor while every slot has been busy without a break for
// s.saturation or longer.
func (s *Handler) readiness() (bool, readyBody) {
	if s.draining.Load() {
		return false, readyBody{Status: "draining", Reason: "shutting down: finishing the requests in flight"}
	}
	_, waiting, full, d := s.slots.state()
	if full && d >= s.saturation {
		return false, readyBody{Status: "saturated", SaturatedSeconds: d.Seconds(),
			Reason: fmt.Sprintf("every computing slot (%d, --max-inflight) busy for %v, at least --saturation-threshold %v; %s waiting",
				s.slots.size, d.Round(time.Millisecond), s.saturation, plural(int64(waiting), "request"))}
	}
	return true, readyBody{Status: "ready"}
}

// Reload loads the model of the Source again and swaps it in; requests
// that have taken the old model finish with it. On error the old model
// stays, and the error is logged and returned.
func (s *Handler) Reload(ctx context.Context) error {
	sm, err := loadServed(ctx, s.src)
	if err != nil {
		s.reloadsC.WithLabelValues("error").Inc()
		s.log.Printf("reload: keeping the model loaded at %s: %v", s.model().loaded.Format(time.RFC3339), err)
		return err
	}
	s.cur.Store(sm)
	s.reloads.Add(1)
	s.reloadsC.WithLabelValues("ok").Inc()
	s.items.Set(float64(sm.m.N()))
	s.log.Printf("reloaded %s: n = %d, d = %d", sm.name, sm.m.N(), sm.m.D())
	return nil
}

func (s *Handler) handler() http.Handler {
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
		code := writeError(w, &apiError{code: http.StatusNotFound, field: "path", msg: fmt.Sprintf("no endpoint %q (POST /v1/score, /v1/recommend, /v1/rerank; GET /v1/model, /healthz, /readyz, /metrics)", jsonitem.Truncate(r.URL.Path))})
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
func (s *Handler) get(endpoint string, f func(w http.ResponseWriter) int) http.Handler {
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

func (s *Handler) observe(endpoint string, code int, start time.Time) {
	s.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	s.latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
}

// exchange is an API request being served: the request, the model it
// is served with (taken when its body has been read), and its computing
// slot once it holds one.
type exchange struct {
	s        *Handler
	endpoint string
	r        *http.Request
	sm       *servedModel
	held     bool
}

// slot waits for a computing slot until ctx is done (then it returns
// ctx.Err() without one), and runs the test hook once it holds one. The
// endpoint computes only once it holds a slot; serveAPI releases it.
func (x *exchange) slot(ctx context.Context) error {
	if err := x.s.slots.acquire(ctx); err != nil {
		return err
	}
	x.held = true
	if x.s.hook != nil {
		x.s.hook(x.r)
	}
	return nil
}

// waitSlot waits for a computing slot as long as the client waits, for
// the endpoints without a deadline of their own.
func (x *exchange) waitSlot() *apiError {
	if x.slot(x.r.Context()) != nil {
		return clientGone("while waiting for a computing slot")
	}
	return nil
}

// StatusClientClosedRequest (499, nginx's convention) is the status
// counted in ndpp_serve_requests_total for a request whose client went
// away before its answer (its connection closed): the service did not
// fail, so a 5xx alert does not fire on clients' time-outs. No one reads
// the response.
const StatusClientClosedRequest = 499

// clientGone is the answer to a request whose client went away (when).
func clientGone(when string) *apiError {
	return &apiError{code: StatusClientClosedRequest, msg: "the client closed the request " + when}
}

// api wraps a POST endpoint: method and content type, the body limit, the
// current model, the computing slot, panics (500, logged), metrics.
func (s *Handler) api(endpoint string, f func(x *exchange) (any, *apiError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.active.Add(1)
		defer s.active.Add(-1)
		r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, start))
		code := s.serveAPI(endpoint, f, w, r)
		s.observe(endpoint, code, start)
	})
}

func (s *Handler) serveAPI(endpoint string, f func(*exchange) (any, *apiError), w http.ResponseWriter, r *http.Request) (code int) {
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.lim.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return writeError(w, &apiError{code: http.StatusRequestEntityTooLarge, field: "body", msg: fmt.Sprintf("larger than %d bytes (--max-body)", mbe.Limit)})
		}
		return writeError(w, badField("body", "reading: %v", err))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	x := &exchange{s: s, endpoint: endpoint, r: r, sm: s.model()}
	defer func() {
		if x.held {
			s.slots.release()
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic in %s: %v", endpoint, p)
			code = writeError(w, &apiError{code: http.StatusInternalServerError, msg: "internal error"})
		}
	}()
	out, aerr := f(x)
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
		return badField("body", "invalid JSON at byte %d: %s", se.Offset, jsonitem.Truncate(se.Error()))
	case errors.As(err, &te):
		field := valuePath(body, te.Offset)
		if field == "" {
			field = "body"
		}
		got := te.Value // "string", "number 1.5", "bool", "array", "object"
		if got == "bool" {
			got = "boolean"
		}
		return badField(field, "got a JSON %s, want %s", jsonitem.Truncate(got), jsonType(te.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return badField(keyName(name), "unknown field")
	}
	return badField("body", "%s", jsonitem.Truncate(err.Error()))
}

// keyName is how errors name the field of a JSON object's key: the key,
// truncated, and `""` for the empty key.
func keyName(key string) string {
	if key == "" {
		return `""`
	}
	return jsonitem.Truncate(key)
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
		name := keyName(key)
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

// valuePath returns the path in body ("relevance[1]",
// "new_items[0].v", "attributes.brand[2]"; "" for body itself) of the
// value that a json.UnmarshalTypeError's Offset points at: the end of a
// string, number, boolean or null, or just past the opening bracket of an
// array or object (the decoder's offsets). The decoder's own Field names
// no array positions.
func valuePath(body []byte, offset int64) string {
	type frame struct {
		at     string // the path of the array or object
		obj    bool
		key    string
		hasKey bool
		index  int
	}
	var stack []*frame
	here := func() string { // the path of the value being read
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if !f.obj {
			return fmt.Sprintf("%s[%d]", f.at, f.index)
		}
		if f.at == "" {
			return jsonitem.Truncate(f.key)
		}
		return f.at + "." + jsonitem.Truncate(f.key)
	}
	next := func() { // the value at here() has been read
		if len(stack) > 0 {
			f := stack[len(stack)-1]
			f.hasKey = false
			f.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			at := here()
			if dec.InputOffset() == offset {
				return at
			}
			stack = append(stack, &frame{at: at, obj: tok == json.Delim('{')})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			next()
			continue
		}
		if f := len(stack); f > 0 && stack[f-1].obj && !stack[f-1].hasKey {
			stack[f-1].key, stack[f-1].hasKey = tok.(string), true
			continue
		}
		if dec.InputOffset() == offset {
			return here()
		}
		next()
	}
}

// jsonType names the JSON type that decodes into a value of Go type t.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}

// rows maps the JSON items of a list to the model's rows (jsonitem.Rows):
// unknown items and repeats are errors naming field[i].
func (sm *servedModel) rows(field string, items []json.RawMessage, dst []int) ([]int, *apiError) {
	rows, e := jsonitem.Rows(sm.m, field, items, dst)
	if e != nil {
		return nil, badField(fmt.Sprintf("%s[%d]", field, e.Index), "%s", e.Msg)
	}
	return rows, nil
}

type scoreRequest struct {
	Baskets [][]json.RawMessage `json:"baskets"`
}

type scoreResponse struct {
	LogLikelihoods []*float64 `json:"log_likelihoods"` // null when det L_S = 0
}

// baskets maps the baskets of a request (field name), each non-empty
// unless allowEmpty; single names the one basket field itself.
func (s *Handler) baskets(sm *servedModel, field string, in [][]json.RawMessage, allowEmpty, single bool) ([][]int, *apiError) {
	if len(in) > s.lim.MaxBaskets {
		return nil, badField(field, "%d baskets; at most %d (--max-baskets)", len(in), s.lim.MaxBaskets)
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
		if len(items) > s.lim.MaxItems {
			return nil, badField(f, "%d items; at most %d (--max-items)", len(items), s.lim.MaxItems)
		}
		rows, aerr := sm.rows(f, items, make([]int, 0, len(items)))
		if aerr != nil {
			return nil, aerr
		}
		out[b] = rows
	}
	return out, nil
}

func (s *Handler) score(x *exchange) (any, *apiError) {
	sm, r := x.sm, x.r
	if aerr := x.waitSlot(); aerr != nil {
		return nil, aerr
	}
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

func (s *Handler) recommend(x *exchange) (any, *apiError) {
	sm, r := x.sm, x.r
	if aerr := x.waitSlot(); aerr != nil {
		return nil, aerr
	}
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
	n := min(10, s.lim.MaxN, sm.m.N())
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > s.lim.MaxN || n > sm.m.N() {
		return nil, badField("n", "%d; want 1 ≤ n ≤ %d", n, min(s.lim.MaxN, sm.m.N()))
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
			return nil, clientGone("during the recommendation")
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

type rerankResponse struct {
	Items        []json.RawMessage `json:"items"`
	Gains        []float64         `json:"gains"`
	LogValue     *float64          `json:"log_value,omitempty"` // absent without gains (theta 1, greedy_deadline, sample_deadline)
	ShortReason  string            `json:"short_reason,omitempty"`
	PolishSwaps  int               `json:"polish_swaps,omitempty"`
	PolishCapped bool              `json:"polish_capped,omitempty"`
	SampleTries  int               `json:"sample_tries,omitempty"`
	Degraded     string            `json:"degraded,omitempty"`
}

// DegradedSlot is the "degraded" of a /v1/rerank answer whose deadline
// passed while it waited for a computing slot (every one of
// Limits.MaxInflight busy): relevance order as rerank.DegradedGreedy,
// computed without a slot.
const DegradedSlot = "slot_deadline"

// rerank reads, checks and maps the request before it waits for a
// computing slot, and waits no longer than its deadline: a request whose
// deadline passes in the queue is answered at once in relevance order
// (DegradedSlot), which needs no slot, or with a 503 without degrade.
func (s *Handler) rerank(x *exchange) (any, *apiError) {
	sm, r := x.sm, x.r
	var req rerank.JSONRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, aerr
	}
	switch {
	case len(req.Candidates) == 0:
		return nil, badField("candidates", "missing or empty")
	case len(req.Candidates) > s.lim.MaxCandidates:
		return nil, badField("candidates", "%d candidates; at most %d (--max-candidates)", len(req.Candidates), s.lim.MaxCandidates)
	case req.K == nil:
		return nil, badField("k", "missing")
	case *req.K < 1 || *req.K > len(req.Candidates) || *req.K > s.lim.MaxK:
		return nil, badField("k", "%d; want 1 ≤ k ≤ %d (the candidates, at most --max-k)", *req.K, min(len(req.Candidates), s.lim.MaxK))
	case len(req.Shown) > s.lim.MaxShown:
		return nil, badField("shown", "%d items; at most %d (--max-shown)", len(req.Shown), s.lim.MaxShown)
	case req.Window < 0:
		return nil, badField("window", "%d; want ≥ 0 (0: no window)", req.Window)
	case req.Quality != nil && len(req.Quality) != len(req.Candidates):
		return nil, badField("quality", "%d scores for %d candidates", len(req.Quality), len(req.Candidates))
	case req.TimeoutMs < 0 || time.Duration(req.TimeoutMs) > s.lim.MaxRerankTimeout/time.Millisecond:
		return nil, badField("timeout_ms", "%d; want 0 ≤ timeout_ms ≤ %d (0: %d, --rerank-timeout; at most --max-rerank-timeout)",
			req.TimeoutMs, s.lim.MaxRerankTimeout.Milliseconds(), s.lim.RerankTimeout.Milliseconds())
	case req.PolishMaxRatios < 0 || req.PolishMaxRatios > s.lim.MaxPolishRatios:
		return nil, badField("polish_max_ratios", "%d; want 0 ≤ polish_max_ratios ≤ %d (0: the largest, --max-polish-ratios)", req.PolishMaxRatios, s.lim.MaxPolishRatios)
	case req.PolishPool > s.lim.MaxPolishPool:
		return nil, badField("polish_pool", "%d; want 0 ≤ polish_pool ≤ %d (--max-polish-pool)", req.PolishPool, s.lim.MaxPolishPool)
	}
	rq, err := req.Request(sm.m)
	if err != nil {
		return nil, requestError(err)
	}
	if rq.PolishMaxRatios == 0 {
		rq.PolishMaxRatios = s.lim.MaxPolishRatios
	}
	timeout := s.lim.RerankTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	// The client's context (a client that goes away stops the work) with
	// the request's deadline, counted from its arrival: it bounds the wait
	// for a slot, and what is left of it the work.
	ctx, cancel := context.WithDeadline(r.Context(), arrival(r.Context()).Add(timeout))
	defer cancel()
	queued := false
	if err := x.slot(ctx); err != nil {
		switch {
		case r.Context().Err() != nil:
			return nil, clientGone("while waiting for a computing slot")
		case !rq.Degrade:
			return nil, &apiError{code: http.StatusServiceUnavailable, field: "timeout_ms",
				msg: fmt.Sprintf("no computing slot free within %v (--max-inflight busy) and degrade is false", timeout)}
		}
		// Rerank with the deadline passed answers in relevance order
		// without computing a greedy step.
		queued = true
	}
	ws := s.ws.Get().(*rerank.Workspace)
	defer s.ws.Put(ws)
	res, err := ws.Rerank(ctx, sm.m, rq)
	if err != nil {
		switch {
		case errors.As(err, new(*rerank.RequestError)):
			return nil, requestError(err)
		case r.Context().Err() != nil:
			return nil, clientGone("during the rerank")
		case errors.Is(err, context.DeadlineExceeded):
			return nil, &apiError{code: http.StatusServiceUnavailable, field: "timeout_ms",
				msg: fmt.Sprintf("not done within %v and degrade is false", timeout)}
		}
		return nil, &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	if queued && (res.Degraded == rerank.DegradedGreedy || res.Degraded == rerank.DegradedSample) {
		res.Degraded = DegradedSlot
	}
	if res.Degraded != "" {
		s.degraded.WithLabelValues(res.Degraded).Inc()
	}
	out := rerankResponse{Items: make([]json.RawMessage, len(res.Items)), Gains: append([]float64{}, res.Gains...), PolishSwaps: res.PolishSwaps,
		PolishCapped: res.PolishCapped, SampleTries: res.SampleTries, Degraded: res.Degraded, ShortReason: res.Short}
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

// requestError is the 400 of a *rerank.RequestError in err, naming its
// field (and the position in it).
func requestError(err error) *apiError {
	var re *rerank.RequestError
	if !errors.As(err, &re) {
		return &apiError{code: http.StatusInternalServerError, msg: err.Error()}
	}
	f := re.Field
	if re.Index >= 0 {
		f = fmt.Sprintf("%s[%d]", re.Field, re.Index)
	}
	return badField(f, "%s", re.Reason)
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

func (s *Handler) modelInfo() modelInfo {
	sm := s.model()
	return modelInfo{File: sm.name, Items: sm.m.N(), D: sm.m.D(), Shared: sm.m.Shared(), Diagonal: sm.m.HasDiag(),
		MaxRank: sm.m.MaxRank(), ItemNames: sm.names, LogNormalizer: sm.logNorm,
		LoadedAt: sm.loaded.UTC().Format(time.RFC3339Nano), Reloads: s.reloads.Load(), Backend: blas.Backend()}
}
