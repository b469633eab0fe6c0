package serve

import (
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/ndpp-go/ndpp/rerank"
)

// Limits bound what one request may ask for. Error messages name each
// limit by the flag of ndpp-bench serve that sets it.
type Limits struct {
	MaxBody       int64 // request body bytes (--max-body)
	MaxCandidates int   // /v1/rerank candidates (--max-candidates)
	MaxK          int   // /v1/rerank k (--max-k)
	MaxShown      int   // /v1/rerank shown items (--max-shown)
	MaxItems      int   // items per basket, /v1/score and /v1/recommend (--max-items)
	MaxBaskets    int   // baskets per request (--max-baskets)
	MaxN          int   // /v1/recommend n (--max-n)
	MaxInflight   int   // requests computed at once; others wait for a slot (--max-inflight)

	// /v1/rerank's deadline and polish bounds.
	RerankTimeout    time.Duration // deadline of a request without timeout_ms (--rerank-timeout)
	MaxRerankTimeout time.Duration // largest timeout_ms (--max-rerank-timeout)
	MaxPolishRatios  int64         // largest polish_max_ratios, and its default (--max-polish-ratios)
	MaxPolishPool    int           // largest polish_pool, at most rerank.MaxPolishPool (--max-polish-pool)
}

// DefaultLimits returns the default limits (ndpp-bench serve's).
func DefaultLimits() Limits {
	return Limits{MaxBody: 1 << 20, MaxCandidates: 2000, MaxK: 100, MaxShown: 100,
		MaxItems: 100, MaxBaskets: 256, MaxN: 1000, MaxInflight: 4 * runtime.GOMAXPROCS(0),
		// 250 ms: a rerank sits in a page's render path; the greedy of the
		// largest request the default limits allow (2000 candidates,
		// k = 100, d = 30) takes 5–35 ms on a loaded 2-core machine, so
		// the deadline leaves it a wide margin and gives the polish the
		// rest.
		RerankTimeout: 250 * time.Millisecond, MaxRerankTimeout: 10 * time.Second,
		MaxPolishRatios: rerank.DefaultPolishMaxRatios, MaxPolishPool: rerank.MaxPolishPool}
}

// Options configure a Handler (New) and the way Run stops it. Error
// messages name each setting by the flag of ndpp-bench serve that sets it.
type Options struct {
	Limits Limits
	// SaturationThreshold: /readyz answers 503 "saturated" once every
	// computing slot has been busy this long without a break (0: as soon
	// as all are busy) (--saturation-threshold).
	SaturationThreshold time.Duration
	// DrainDelay: once Run's context is done, how long /readyz answers
	// 503 while requests are still accepted and served, before the
	// listener closes (0: close at once) (--drain-delay).
	DrainDelay time.Duration
	// ShutdownTimeout is the longest Run waits for the requests in flight
	// once the listener has closed; longer than Limits.MaxRerankTimeout,
	// so that a rerank in flight can meet its deadline
	// (--shutdown-timeout).
	ShutdownTimeout time.Duration
	// Logger receives the service's log lines: reloads, panics of
	// requests (answered 500), the drain; nil discards them.
	Logger *log.Logger
}

// Defaults of Options.
const (
	DefaultSaturationThreshold = time.Second
	DefaultDrainDelay          = 5 * time.Second
	DefaultShutdownTimeout     = 30 * time.Second
)

// DefaultOptions returns DefaultLimits and the default durations, without
// a Logger.
func DefaultOptions() Options {
	return Options{Limits: DefaultLimits(), SaturationThreshold: DefaultSaturationThreshold,
		DrainDelay: DefaultDrainDelay, ShutdownTimeout: DefaultShutdownTimeout}
}

// Check returns an error naming the first setting out of its range.
func (o Options) Check() error {
	l := o.Limits
	switch {
	case l.MaxBody < 1 || l.MaxCandidates < 1 || l.MaxK < 1 || l.MaxShown < 0 || l.MaxItems < 1 ||
		l.MaxBaskets < 1 || l.MaxN < 1 || l.MaxInflight < 1:
		return errors.New("limits must be ≥ 1 (--max-shown ≥ 0)")
	case l.RerankTimeout <= 0 || l.MaxRerankTimeout < l.RerankTimeout || l.MaxPolishRatios < 1 ||
		l.MaxPolishPool < 1 || l.MaxPolishPool > rerank.MaxPolishPool:
		return fmt.Errorf("want 0 < --rerank-timeout ≤ --max-rerank-timeout, --max-polish-ratios ≥ 1 and 1 ≤ --max-polish-pool ≤ %d", rerank.MaxPolishPool)
	case o.ShutdownTimeout <= l.MaxRerankTimeout:
		return fmt.Errorf("--shutdown-timeout %v must be longer than --max-rerank-timeout %v (a request in flight at shutdown must be able to meet its deadline)", o.ShutdownTimeout, l.MaxRerankTimeout)
	case o.DrainDelay < 0:
		return errors.New("--drain-delay must be ≥ 0")
	case o.SaturationThreshold < 0:
		return errors.New("--saturation-threshold must be ≥ 0")
	}
	return nil
}
