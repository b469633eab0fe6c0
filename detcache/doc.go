// Package detcache is the determinant oracle of the online MAP algorithms.
// It holds the current solution S (an ordered list of at most k distinct
// items) of an NDPP with kernel L = D + VᵀV + BᵀCB and answers "what is
// det L over S with these items swapped in?" for arriving items, as
// ndpp.Value (log det with a zero flag; the empty set has Log 0, a set
// with a repeated item is zero). The capacity k is at most the kernel's
// rank bound (ndpp.Model.MaxRank, ndpp.Kernel.MaxRank): 2d (d when B = V)
// without a diagonal, and n with one.
//
// Two implementations share the Oracle interface: Fast, the incremental
// oracle (O(kd + k²) per arriving item, O(1) per candidate value, with
// error bounds that decide when a value must come from a fresh LU), and
// Naive, which recomputes every value with a fresh LU (the model's
// equilibrated log-determinant, ndpp.LogDetEquilibrated). Every value
// returned by AddValue, SwapValues (one per position) and PairSwapValue
// counts as one determinant evaluation, the unit of the online-MAP papers,
// identically in both. Fast scores blocks of arriving items with
// matrix–matrix products (ScoreBlock, Block) and proves values below a
// threshold without computing them. Both save and restore their state
// (MarshalBinary).
//
// An oracle is built either over a model (NewFast, NewNaive: items are
// model indices; Prepare, ScoreBlock) or over a kernel description
// (NewFastKernel, NewNaiveKernel with an ndpp.Kernel), for items that
// arrive as vectors (ndpp.Item; PrepareItem, ScoreBlockItems). Both run
// the same code on an item's v, b, bᵀC and δ: views of the model's rows for
// a model's items (ndpp.ModelItem), copies otherwise, so that the same
// vectors give the same bits. The caller validates vector items
// (ndpp.CheckItem, ndpp.ItemCheck); an oracle of a vector kernel holds
// O(k·d + d²) whatever the number of items streamed. ItemAt returns the
// items of S.
//
// The identities (add, swap and pair-swap ratios through M⁻¹ and the Schur
// complement) are in docs/math.md in the repository, "The fast swap
// oracle"; the O(k²) updates, the error bounds and zero rules are on Fast,
// the block proofs on Block, the state format on Fast.MarshalBinary.
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
package detcache
