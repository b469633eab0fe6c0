// Package serve is ndpp's HTTP service as a library: JSON endpoints that
// score baskets, recommend next items and rerank candidates over a model,
// for a Go service to mount in its own mux (see the example) or for
// ndpp-bench serve to run on its own.
//
// A Handler (New) serves POST /v1/score, /v1/recommend and /v1/rerank
// (whose body is rerank.JSONRequest), and GET /v1/model, /healthz,
// /readyz and /metrics (Prometheus, ndpp_serve_…, in a registry of the
// handler's own). It holds:
//
//   - the model of a Source (File, an .npz file within its memory budget;
//     Static, a model built in memory), swapped atomically by Reload: a
//     request finishes on the model it started with, and a model that does
//     not load leaves the old one serving;
//   - the limits of a request (Limits), and a deadline for each rerank,
//     counted from the request's arrival, past which the answer is
//     degraded;
//   - a pool of Limits.MaxInflight computing slots (a
//     golang.org/x/sync/semaphore): a request reads its body first, then
//     waits for a slot in order of arrival, and stops waiting when its
//     client goes away; a rerank, read and checked before it waits, waits
//     no longer than its deadline, and is then answered at once in
//     relevance order without a slot (DegradedSlot);
//   - metrics: ndpp_serve_requests_total counts a request whose client
//     went away before its answer with code 499
//     (StatusClientClosedRequest, nginx's convention), not as a 5xx;
//   - readiness: /readyz answers 503 while every slot has been busy
//     without a break for Options.SaturationThreshold, and from the start
//     of a drain on;
//   - strict JSON: field names exact (no case folding), a field given
//     twice, an unknown field or trailing data refused; a bad request is
//     a 4xx with {"error", "field"} naming the field (candidates[3],
//     constraints[0].max_run, …).
//
// Run serves a listener until its context is done, then drains: /readyz
// turns 503 while requests are still served for Options.DrainDelay, then
// http.Server.Shutdown waits for the requests in flight, up to
// Options.ShutdownTimeout.
//
// Messages and log lines name the settings by the flags of ndpp-bench
// serve that set them (--max-body for Limits.MaxBody, …). The README's
// "Serving" section documents the endpoints, their JSON and measured
// latencies; docs/architecture.md places the package.
package serve
