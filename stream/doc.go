// Package stream implements streaming and online MAP inference for
// nonsymmetric DPPs — the four algorithms of Reddy et al., "Online MAP
// Inference and Learning for Nonsymmetric Determinantal Point Processes"
// (arXiv:2111.14674): Stream-Partition, Online-LSS, Online-2-neighbor and
// Online-Greedy — on top of the detcache oracle, plus the offline greedy
// baseline of Gartrell et al. (ICLR 2021, Alg. 1), local search over single
// and pair swaps (Anari & Vuong, "Simple and Near-Optimal MAP Inference for
// Nonsymmetric DPPs") and exact MAP by enumeration for small n.
//
// # Problem
//
// Items of a model L = D + VᵀV + BᵀCB (D = diag(δ) ≥ 0, zero for a
// low-rank model) arrive one at a time; the goal is a set S of k items
// maximising f(S) = det L_S, for 1 ≤ k ≤ ndpp.Model.MaxRank (2d, or d when
// B = V, without a diagonal, as every larger set then has determinant 0; n
// with one). Values are kept in log space with a zero flag
// (ndpp.Value): "f(S) ≠ 0" means the oracle's numerical zero rule
// (ndpp.ZeroRcondFactor for fresh LUs, detcache's cancellation rule for the
// fast oracle) did not declare det L_S zero. The reported objective of a
// run is f_k(S) = det L_S when |S| = k and 0 otherwise (Result.Objective).
//
// # Interfaces
//
// Every online algorithm is a Solver: Observe(item), Solution, Value,
// Stats, and MarshalBinary/UnmarshalBinary snapshots that continue with
// identical results (the oracle's own MarshalBinary saves its exact state;
// candidate products are prepared again on demand). Run feeds a stream and
// samples trajectories every m items; RandomOrder gives seeded random-order
// streams. Solvers take a detcache.Oracle, so the fast and the naive oracle
// are interchangeable. Run, RunItems and RunItemsAll stop between two items
// once their context is done (checked before every item that goes through
// Observe, every block of skipped ones and, for Online-2-neighbor, within
// the stash search, which then rolls its item back) and return an error
// wrapping ctx.Err(); the solver has then observed a prefix of the stream
// and stays usable: fed the rest, it ends as an uninterrupted run.
//
// # Items that arrive from outside
//
// A solver on an oracle of a vector kernel (detcache.NewFastKernel,
// detcache.NewNaiveKernel) takes items as vectors: ObserveItem,
// ObserveItems (blocks filled from the items as they come), and RunItems,
// which reads an ItemSource (a file or a pipe, package ndpp/items; a
// model's items as vectors, ModelSource; a slice, SliceSource) until
// io.EOF; RunItemsAll feeds one pass of a source to several solvers. The
// solver keeps copies of the vectors it needs — those of S (in the
// oracle), of the stash T and, for Online-2-neighbor, of the previous
// item — so its memory is O((k + |T|)·d + d²), independent of the stream's
// length. The model-backed solvers (Observe, ObserveBatch, Run) run the
// same code, their items being views of the model's rows: a model's items
// streamed as vectors give the same solutions, values, evaluation, add and
// swap counts, stashes and trajectories (tested for every algorithm, both
// oracles, with and without block scoring and a diagonal). Stream-Partition
// needs the stream's length n in advance: from the source when it knows it
// (LenSource, SourceLen: an NPY header) or from the user. Arriving vector
// items are validated (ndpp.ItemCheck: their shapes a batch at a time,
// their values by the block scoring, which proves nothing about a bad item,
// and by the one-item path): an item with a non-finite entry, the wrong
// shape or a scale that would overflow the kernel's values
// (ndpp.CheckItem) is an error naming it, after the items before it
// have been observed.
//
// # Rules (exactly as implemented)
//
//   - Stream-Partition: the item at 1-based position p is in partition
//     ⌈p·k/n⌉; keep the first maximiser of f(S ∪ {t}) and add it at the
//     partition's last item if its value is non-zero.
//   - Online-LSS(α): fill while |S| < k with items of non-zero f(S ∪ {t});
//     then apply the best single swap (lowest position on ties) if it beats
//     α·f(S), stashing the removed item; after an accepted swap, repeatedly
//     apply the best stash swap f(S − a + b) > α·f(S) (stash order, then
//     position, on ties).
//   - Online-2-neighbor(α): as LSS, with pair moves {t−1, t} (t−1 not in S)
//     in the arriving step and the whole 2-neighbourhood of S within S ∪ T
//     in the stash search, best move first, singles before pairs on ties.
//   - Online-Greedy: fill, then swap t for the best j when f strictly grows.
//
// Local search (LocalSearch) starts from any set (greedy's, an online
// solution, a user's) and applies the best single swap S − j + t, or pair
// swap S − {i, j} + {t, u} with t, u from a pool of candidates (the top
// items by conditional gain; LocalSearchOptions.Pool), while it multiplies
// f(S) by more than 1 + ε; it stops at a (1 + ε)-local optimum of that
// neighbourhood. With the whole 2-neighbourhood searched, a local optimum
// is within a factor k^O(k) of the MAP for nonsymmetric kernels (Anari &
// Vuong); single swaps alone give no such factor, and a restricted pool
// makes the search a heuristic. Swaps are priced by the oracle in O(1)
// after O(kd + k²) per candidate.
//
// A stash cap (Options.StashCap, beyond the paper) drops the oldest stash
// item; it bounds memory but voids the approximation guarantee, which needs
// every swapped-out item to stay available.
//
// # Math
//
// The oracle evaluates a swap S − j + t through the Jacobi identity
// det L_{S−j+t}/det L_S = s·(L_S⁻¹)_jj + p_j q_j with p = L_S⁻¹L_{S,t},
// qᵀ = L_{t,S}L_S⁻¹ and the Schur complement s = L_tt − L_{t,S}L_S⁻¹L_{S,t};
// pair moves through a 4×4 determinant. The offline greedy keeps every
// item's Schur complement s_x against the growing S with two families of
// coefficient vectors (rows and columns, since L is not symmetric):
// R_r(x, y) = L_xy − Σ_{m<r} a_m(x)b_m(y), a_r(x) = R_r(x, j_r)/s_{j_r},
// b_r(x) = R_r(j_r, x), s_x ← s_x − a_r(x)b_r(x), using L_xx = δ_x + ‖v_x‖²
// and L_{x,j} = v_x·v_j − b_x·(b_jᵀC), L_{j,x} = v_x·v_j + b_x·(b_jᵀC) for a
// skew C (x ≠ j: the diagonal enters only L_xx): O(n·k·(k + d)) in all. See
// docs/math.md in the repository.
//
// # Block scoring
//
// Between accepted changes, arriving items are scored against the same S, so
// Run feeds solvers through ObserveBatch, which hands blocks of 256 items to
// the oracle's block scoring (detcache.Oracle.ScoreBlock: the products of the
// whole block by matrix–matrix calls). The oracle then proves, with the
// identities and error bounds of its one-item path, that an item's moves
// cannot beat α·f(S) (or, in Stream-Partition, the partition's candidate);
// such an item is skipped and its evaluations counted as the oracle would
// count them. Every other item goes through Observe, and after an accepted
// change the rest of the block is scored again, so decisions, values and
// counters are identical to observing one item at a time (tested, with
// every ruled-out move checked against a fresh determinant). The same
// proof skips fruitless stash-search rounds. The naive oracle scores no
// blocks (every item goes through Observe), and Options.OracleOnly turns
// block scoring off to time the oracles themselves.
//
// # Snapshots
//
// MarshalBinary writes the project's binary format (internal/binfmt: magic,
// version 3, CRC-32C) holding the algorithm's name, the solver's fields, a
// flag for solvers of vector items and the oracle's own state; a solver of
// vector items also saves the vectors of its stash, of the previous item and
// of Stream-Partition's candidate, so that a fresh solver on a fresh oracle
// of the same kernel resumes the stream exactly. UnmarshalBinary refuses
// other algorithms, snapshots of the other kind (model-backed or vector),
// corrupt or truncated data, snapshots of the format before binfmt (version
// 1) and oracle states of a model with another n, d or diagonal or of
// another kernel (detcache records them), leaving the solver unchanged;
// snapshots of version 2 are read by model-backed solvers.
//
// # Measurements
//
// Stats and Result report items processed, determinant evaluations (the
// oracle's Evals: candidate values computed, the paper's unit), adds,
// swaps (accepted single or pair moves), stash size and peak, and wall
// time. Throughputs are in BENCHMARKS.md.
package stream
