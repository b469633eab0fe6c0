// Package detcache is the determinant oracle of the online MAP algorithms.
// It holds the current solution S (an ordered list of at most k distinct
// items) of an NDPP with kernel L = D + VᵀV + BᵀCB, D = diag(δ) ≥ 0 (zero
// for a low-rank model), and answers "what is det L over S with these
// items swapped in?" for arriving items. The capacity k is at most the
// model's ndpp.Model.MaxRank: 2d (d when B = V) without a diagonal, whose
// larger sets all have determinant zero, and n with one.
//
// Two implementations share the Oracle interface: Fast, the incremental
// oracle (O(kd + k²) per arriving item, O(1) per candidate value), and
// Naive, which recomputes every value with a fresh LU (ndpp.Model.LogDet).
// Every value returned by AddValue, SwapValues (one per position) and
// PairSwapValue counts as one determinant evaluation, the unit of the
// online-MAP papers, identically in both.
//
// # Items given as vectors
//
// An oracle is built either over a model (NewFast, NewNaive: items are
// model indices, Prepare and ScoreBlock) or over a kernel description
// (NewFastKernel, NewNaiveKernel: Kernel gives d, C, whether B = V and
// whether items carry a diagonal entry), for items that arrive as vectors
// (Item: an id, v, b and δ; PrepareItem and ScoreBlockItems). Both run the
// same code: every computation reads an item's vectors v, b, bᵀC and δ, as
// views of the model's rows for a model's items and as copies otherwise
// (bᵀC computed by ndpp.RowTimesC, the model's own routine, so that the
// same vectors give the same bits either way). A Block of vector items
// leaves bᵀC out where it can: with C exactly skew-symmetric, b_tᵀCb_t = 0
// in L_tt, and the rounding of the term the one-item path computes enters
// the column's error bound instead (see ScoreBlockItems); its proofs, not
// its bits, are what the solvers use. CheckItem (and ItemCheck, for many
// items) validates a vector item: its shape, finite entries, δ, and a
// scale (‖z‖² + δ)·(1 + d·max|C|) within ndpp.MaxKernelScale — the bound
// ndpp.Model.CheckScale puts on a model, per item — so that the kernel's
// values of any set of valid items stay finite. An oracle keeps copies of
// the vectors of S, a Cand of its item's and a Block of its items', so an
// oracle of a vector kernel holds O(k·d + d²) whatever the number of items
// streamed, and the caller may reuse an item's slices after the call.
// ModelItem turns a model's item into an Item (views); ItemAt returns the
// items of S, so that a caller can keep the vectors of an item that leaves
// S. Item ids of vector items are the caller's (≥ 0; distinct items need
// distinct ids: an id already in S is the same item).
//
// # Values
//
// A Value is log det L_{S'} with a zero flag, never a raw determinant. The
// empty set has Log 0. A set with a repeated item has determinant zero.
//
// # Identities (Fast)
//
// With M = L_S (k×k), M⁻¹ and log det M kept, an arriving item t gives
// u = L_{S,t}, w = L_{t,S}, p = M⁻¹u, qᵀ = wᵀM⁻¹ and the Schur complement
// s = L_tt − wᵀM⁻¹u. Because C is skew, with a = V_Sᵀv_t and c = B_SᵀCb_t
// (rows bᵢᵀC are kept), u = a + c and w = a − c: O(kd), then O(k²) for p,
// q and s (Prepare). The diagonal enters the diagonal entries only:
// L_tt = δ_t + v_t·v_t (b_tᵀCb_t = 0), and M's diagonal; u, w and Σ_xy
// (x ≠ y) are off-diagonal entries and do not see it. Then
//
//	add:        det L_{S+t} / det M = s
//	swap j→t:   det L_{S−j+t} / det M = s·(M⁻¹)_jj + p_j q_j           (Jacobi)
//	pair R→X:   det L_{S−R+X} / det M = det [[(M⁻¹)_RR, P_R], [−Q_R, Σ]]
//
// with, for R = {a, b} and X = {x, y}, P = [p_x p_y], Q = [q_xᵀ; q_yᵀ] and
// Σ = L_XX − L_{X,S}M⁻¹L_{S,X} (Σ_xx = s_x, Σ_xy = L_xy − w_x·p_y): a 4×4
// determinant per pair of positions, O(1) after O(d + k) per pair of
// candidates. At k = 2d, when no item of S has a diagonal entry, Σ_xy is
// exactly zero, and so is s when t has none either (those rows and columns
// of L have rank ≤ 2d): they are then set so, which removes their rounding
// noise from the swap values. Otherwise sets larger than 2d can have
// non-zero determinants, and s and Σ are computed like any other.
//
// Accepted changes update M⁻¹ in O(k²): Add by the bordered inverse
// [[M⁻¹ + pqᵀ/s, −p/s], [−qᵀ/s, 1/s]]; Swap by the inverse of L_{S+t} with
// index j deleted, scaled by s so that it never divides by s (it holds when
// L_{S+t} is singular, e.g. at k = 2d without a diagonal): with
// m = (M⁻¹)_jj, α and β column and row j of M⁻¹ and r the swap ratio,
//
//	M'⁻¹_il = M⁻¹_il + p_i (m q_l − q_j β_l)/r − α_i (s β_l + p_j q_l)/r   (i, l ≠ j)
//	M'⁻¹_ij = (α_i p_j − p_i m)/r,  M'⁻¹_jl = (q_j β_l − q_l m)/r,  M'⁻¹_jj = m/r;
//
// PairSwap by two such swaps, in the order whose intermediate set is
// further from singular (or a refactor when neither is safe). A general
// Woodbury update was measured to lose accuracy as κ² and is not used.
// Every RefactorEvery updates, and earlier when the accumulated conditioning
// calls for it, L_S is refactored from scratch (LU, O(k³)) and the drift of
// M⁻¹ and of log det M is recorded in Stats.MaxDrift and
// Stats.MaxLogDetDrift.
//
// # Numerical rules
//
// Naive uses ndpp's zero rule: a set is zero when its kernel, equilibrated
// by the item norms ‖zᵢ‖ = (‖vᵢ‖² + ‖bᵢ‖² + δᵢ)^½, has reciprocal condition
// number below ndpp.ZeroRcondFactor·|S|·ε, or |S| > MaxRank. The norms
// include δᵢ because ‖zᵢ‖² stands for the size of L_ii = δᵢ + ‖vᵢ‖²; Fast
// uses the same norms in its equilibration and error bounds.
//
// Fast computes each ratio r with the magnitude mag of the terms that
// cancel in it and a first-order bound err on its error: ε·mag for the
// final sums, the kernel entries' own errors (ε·(1 + ‖C‖_F)·‖zᵢ‖‖zⱼ‖, the
// cancellation between vᵢ·vⱼ and bᵢᵀCbⱼ, and on the diagonal the addition
// of δᵢ, both below it as δᵢ ≤ ‖zᵢ‖²), and the errors of M⁻¹, p and q,
// γ times their norm-wise sizes, with γ = GammaSafety·ε·Σκ summed over the
// updates since the last refactor (κ = max(κ₁(E), (1 + ‖C‖_F)·‖E⁻¹‖₁) for
// the equilibrated E = Λ⁻¹L_SΛ⁻¹, Λ = diag(‖zᵢ‖)). Then
//
//   - r is a value when err ≤ FallbackErr·r (relative error below 1e-7 by
//     the bound; the value adds log r to log det M, which itself carries the
//     errors of the ratios accepted since the last refactor, measured by
//     Stats.MaxLogDetDrift);
//   - r is zero when |r| + err ≤ ZeroCancelFactor·ε·min(mag, N), N the
//     natural scale of the ratio (its value if the equilibrated determinant
//     of S' were 1): the ratio is below the rounding noise of its own
//     computation and S' is numerically singular relative to its items;
//   - otherwise the value is computed with a fresh LU of L_{S'} (ndpp's
//     zero rule, with the exact 1-norm condition number, in the oracle's
//     buffers) and counted in Stats.Fallbacks.
//
// While L_S is singular or its κ exceeds MaxCond, Fast is in direct mode:
// every value is computed with a fresh LU (counted as fallbacks) until an
// accepted change makes L_S well-conditioned again. So Fast returns from
// the identities only values whose error bound it can vouch for; near zero
// both implementations apply ndpp's rule and can differ only for sets
// within rounding of the threshold. The tests measure, on thousands of
// random and ill-conditioned operation sequences, |Δ log det| against a
// fresh LU (and against 256-bit arithmetic where the fresh LU is itself
// inaccurate) and log the largest.
//
// The hot path (Prepare, AddValue, SwapValues, PairSwapValue) allocates
// nothing, fallbacks included.
//
// # Block scoring
//
// Between accepted changes the arriving items of the online algorithms are
// scored against the same S, so their products can be shared: ScoreBlock
// computes u, w, p and q for a block of items with matrix–matrix products
// (internal/f64.GemmNN on both backends, with S's rows and M⁻¹ copied
// transposed once per change of S, so that every product takes rows of k
// entries whole), then each item's Schur complement and error scales with
// the code Prepare uses. The Block's SwapsBelow (SwapsBelowFrom for a run
// of columns), PairsBelow and AddBelow then prove that every value
// SwapValues, PairSwapValue or AddValue would return for an item is at
// most a threshold L, from the same ratios (swapRatio, pairRatio, s) and
// the same error bounds as the values. With r' and err' the ratio and bound
// the one-item path would compute, the block's r and err satisfy
// |r' − r| ≤ 3·err and err' ≤ 2·err to first order (the two are the same
// formulas evaluated in different orders, the block's with s, p and q
// raised by twice their own error bounds, so that rounding noise where
// they vanish cannot make Prepare's larger; the tests measure it), and with
// t = exp(L − log det M) reduced by a relative 10⁻⁹ for the rounding of
// exp, log and the sums, a ratio is below when hi = r + 4·err ≤ t and
// either the one-item path would surely take its value from the identity
// (2·err ≤ FallbackErr·(r − 4·err)) or hi ≤ t/2, which leaves room for a
// fresh LU's error and for the drift of log det M when it would fall back.
// Each test first tries a bound on err that holds for all positions
// (swaps) or pairs of positions (pairs), O(1) to form, and computes a
// ratio's own bound only when that does not suffice; since the test is
// monotone in the bound, the answers are those of the own bounds. Naive
// never scores blocks, and Fast does not in direct mode. Block scoring
// counts no evaluations: a caller that skips an item counts those it did
// not make. It allocates nothing. A vector block tests its items' values
// as ItemCheck does (a failing column proves nothing), so that a caller
// that validates what it observes need not validate before scoring.
//
// # State
//
// MarshalBinary saves the solution, M, M⁻¹, log det M, the conditioning
// record and the counters in the project's binary format (internal/binfmt:
// magic, version 4, CRC-32C). A model-backed oracle's state records the
// model's n, d, the capacity and whether it has a diagonal with a CRC-64 of
// δ (not the model), and restores only onto an oracle of the same model and
// capacity; a vector oracle's state records d, the capacity, B = V, the
// diagonal flag and a CRC-64 of C, and carries the vectors of S (v, b, δ),
// so that it restores onto a fresh oracle of the same kernel. Either
// continues bit-identically. Corrupt input (bad magic, version, checksum,
// sizes, items, non-finite entries), states of the other kind, and states
// of the format before binfmt (version 1) are errors; states of versions 3
// and 2 (model-backed oracles; version 2 did not record the diagonal and is
// read as a state of a model without one) are read by model-backed oracles.
//
// # Layout
//
//   - oracle.go: the Oracle interface, Value, Cand, Stats; common.go: checks
//     and the fresh-LU value shared by both implementations; item.go:
//     Kernel, Item and the rows the oracles read.
//   - naive.go: Naive.
//   - fast.go: Fast, its constants and constructor; prepare.go: Prepare and
//     Refresh (u, w, p, q, s and the error scales); values.go: the ratios
//     with their error bounds (swapRatio, pairRatio), the value methods and
//     the fresh-LU fallback; update.go: Add, Swap, PairSwap and the O(k²)
//     updates; cond.go: conditioning, refactors and direct mode.
//   - block.go: block scoring (Block, ScoreBlock, the below tests).
//   - marshal.go: both oracles' states; lu.go: the small dense LU.
//
// # References
//
//   - A. Reddy, T. Rohatgi et al. One-Pass Algorithms for MAP Inference of
//     Nonsymmetric Determinantal Point Processes. ICML 2022 (the online
//     algorithms and their determinant-evaluation counts).
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021 (the kernel L = VᵀV + BᵀCB).
//   - N. J. Higham. Accuracy and Stability of Numerical Algorithms, 2nd ed.,
//     SIAM 2002: LU error bounds, condition numbers, and the instability of
//     Sherman–Morrison–Woodbury updates.
//   - docs/math.md in the repository, "The fast swap oracle".
package detcache
