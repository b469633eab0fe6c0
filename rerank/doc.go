// Package rerank is per-request diversity reranking with a nonsymmetric
// DPP: from a few hundred candidate items with optional quality scores,
// choose k in order, conditioned on what the user was already shown — the
// shape of the DPP rerankers in production recommenders (YouTube's, Hulu's
// sliding-window greedy of Chen et al.), over a shared read-only
// ndpp.Model.
//
// # Problem
//
// With L = D + VᵀV + BᵀCB the model's kernel and qᵢ ≥ 0 the quality of
// candidate i (1 when not given), the reranker works with
// L′ = diag(q)·L·diag(q). It is greedy MAP: with S the conditioning set
// (below), each step adds the candidate i with the largest gain
//
//	det L′_{S+i} / det L′_S = qᵢ² · s_i,  s_i = L_ii − L_{i,S} L_S⁻¹ L_{S,i},
//
// the Schur complement of i given S (L_ii = δᵢ + vᵢ·vᵢ; shown items need no
// quality, as their scale cancels). Ties go to the earlier candidate.
// Steps stop early when no candidate has a positive gain under the zero
// rule (ZeroFactor), as the offline greedy does, so a result may hold
// fewer than k items. With all of the catalogue as candidates, no quality,
// nothing shown and no window it is the offline greedy MAP of Gartrell et
// al. (Alg. 1) on L, the same recurrence (stream.Schur, one
// implementation for both) and zero rule as stream.OfflineGreedy.
//
// # Conditioning set, shown items and the window
//
// The sequence is the shown items (oldest first) followed by the items
// chosen so far. Without a window the conditioning set is all of it; with
// Window = w it is the last w items of it (Chen et al.'s sliding window:
// diversity among nearby positions of a feed), so only the last w shown
// items matter. A shown candidate is never chosen.
//
// A set of items can have det L_S = 0 — more items than the kernel's rank
// (2d without a diagonal), or items the kernel cannot tell apart. The
// conditioning set is then the items of the sequence (or window) kept in
// order by one rule: an item is kept when its Schur complement given the
// items kept before it is positive under the zero rule, and left out
// otherwise. The kept set always has det L_S > 0, and gains are Schur
// complements given it (Result.ShownSkipped counts the shown items left
// out at the start). With δᵢ > 0 for every item no set is singular and
// nothing is left out. Without a diagonal, a shown sequence longer than the
// kernel's rank keeps at most rank-many items, and then, without a window,
// every candidate has a zero gain (a set beyond the rank has det L_S = 0)
// and the result is empty: use a window, or a model with a diagonal.
//
// # Algorithm
//
// Working rows are the candidates that can be chosen and the shown items
// of the window. For the conditioning set y₁ … y_r the workspace keeps,
// for every row x, the Schur complement s_x and two coefficient families
// (L is not symmetric) of the incremental LU of the kernel with the
// conditioning items pivoted first:
//
//	a_m(x) = R_m(x, y_m) / s_{y_m},  b_m(x) = R_m(y_m, x),  s_x = L_xx − Σ_m a_m(x)·b_m(x),
//
// R_m being the kernel less the first m−1 terms — the NDPP form of the
// incremental Cholesky of the offline greedy, stream.Schur's Update, which
// both use (docs/math.md, "Offline greedy"). Adding an item costs one kernel row and
// column over the working rows (vector–matrix products streaming over the
// gathered vectors and the families, stored transposed, in internal/f64's
// kernels) and O(r) per row. Sliding
// the window removes y₁ by the LU form of a rank-one update (Bennett 1965)
// in O(r) per row, the nonsymmetric counterpart of Chen et al.'s Cholesky
// downdate. Removing an item from a nonsingular set can leave a singular
// one when L is not symmetric; when a new pivot is zero, or the window
// holds items left out, the conditioning set is rebuilt from the window's
// items by the rule above (O(w·(d + w)) per row, rare). A request costs
// O(P·(k + s)·(d + w)) for P working rows, s shown items and a
// conditioning set of at most w items.
//
// # Polish
//
// Request.Polish (window 0 only) hands the greedy's set to local search
// (stream.LocalSearch, Anari & Vuong): single swaps with every choosable
// candidate and pair swaps within a pool (Request.PolishPool), applied
// while they multiply det L′_{F ∪ S} by more than 1 + ε, F being the shown
// items kept in the conditioning set (held fixed). The search runs on a
// model of F and the candidates with vectors scaled by qᵢ and diagonal by
// qᵢ², and the fast oracle's Jacobi-identity swap values; the final set is
// ordered greedily given F by the greedy's recurrence over its own rows
// (O(K²(K + d))) and its gains reported as above. When no swap
// applies, the result is the greedy's, unchanged.
//
// # Controls
//
// Besides Quality, a request may give Relevance scores with Chen et al.'s
// knob Theta (qᵢ = exp(α(rᵢ − r_max)), α = θ/(2(1 − θ)); θ = 0 pure
// diversity, θ = 1 relevance order), attribute Constraints (at most c
// items of a value per window of w positions, runs of at most m; each
// step takes the best feasible candidate, the polish only feasible swaps;
// Result.Short says why a list is short) and NewItems, candidates given by
// their vectors and scored as model rows. Result.LogValue is the log
// determinant of the chosen set given the shown items. See Request and
// Result for the exact rules.
//
// # Sampling
//
// Request.Sample replaces the greedy by a random list for exploration: an
// exact sample of the k-NDPP of the choosable candidates under L′ given
// the shown items kept (with a window, of its shown items), P(Y) ∝
// det L′_{F ∪ Y} over the K-sets Y, drawn with package sample's KSampler
// on a model of F and the candidates (as the polish builds) from the PCG
// stream of Request.Seed: the same seed, request and model give the same
// list. The set comes in greedy order given F, with its gains. It is not
// offered with constraints: the lists that keep them are not a k-NDPP,
// and a rejection on them would have no bound on its tries; such a
// request is refused. See docs/math.md, "Fixed-size samples".
//
// # Cost, deadlines and degraded answers
//
// The greedy costs O(P·(K + s)·(d + w)) and is short; the polish is
// bounded by a budget of determinant ratios (Request.PolishMaxRatios,
// default DefaultPolishMaxRatios): a single-swap sweep is about K·N ratios
// for N candidates, a pair round about P²·K²/4 for a pool of P ≤
// MaxPolishPool, and a ratio that needs a fresh LU counts K². Rerank takes
// a context and stops within about a millisecond of its end (the search
// looks at it after every fresh LU). With
// Request.Degrade a passed deadline gives an answer with Result.Degraded
// set — "polish_deadline", the polish's best set so far, or
// "greedy_deadline" or "sample_deadline", relevance order — and a
// cancelled context an error
// wrapping ctx.Err(): see Workspace.Rerank. A sample costs O(P·r²) per
// scale tried and per try (r = 2d, or d when B = V; about four scales and
// seven to twelve tries). Measured latencies, and the answer times of
// deadline-bounded polishes: BENCHMARKS.md in this folder.
//
// # JSON
//
// JSONRequest is the one JSON form of a request (package serve's POST
// /v1/rerank takes it): items named by the model's tokens, as in basket
// files, and the JSON names of the README's "Serving" section.
// JSONRequest.Request maps it to a Request over a model.
//
// # Concurrency and allocation
//
// A Workspace serves one request at a time and keeps its buffers, so the
// steady state allocates nothing without polish (tested); the model is
// only read, so any number of workspaces may rerank over one model at once
// (a sync.Pool of workspaces suits an HTTP handler; see the example).
//
// # References
//
//   - L. Chen, G. Zhang, H. Zhou. Fast Greedy MAP Inference for
//     Determinantal Point Process to Improve Recommendation Diversity.
//     NeurIPS 2018 (the greedy with incremental Cholesky and its sliding
//     window).
//   - M. Wilhelm, A. Ramanathan, A. Bonomo, S. Jain, E. H. Chi, J. Gillenwater.
//     Practical Diversified Recommendations on YouTube with Determinantal
//     Point Processes. CIKM 2018.
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021 (the NDPP greedy).
//   - J. M. Bennett. Triangular factors of modified matrices. Numerische
//     Mathematik 7, 1965 (rank-one updates of an LU factorisation).
package rerank
