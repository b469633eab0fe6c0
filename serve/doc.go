// Package serve is ndpp's HTTP service: JSON endpoints that score baskets,
// recommend next items and rerank candidates over a model, with reload,
// request limits, a pool of computing slots, readiness and Prometheus
// metrics. The README's "Serving" section documents the endpoints.
package serve
