// Package sample draws exact samples from a nonsymmetric DPP: a random
// subset Y of the n items with
//
//	P(Y) = det L_Y / det(I + L),  L = D + VᵀV + BᵀCB  (D diagonal, optional),
//
// of variable size, in O(n·r²) time per sample for the low-rank kernel
// (r = 2d, or d when B = V), and conditioned on items already included
// (Sampler.Given).
//
// # Math
//
// Write L = D + ZᵀWZ with zᵢ = [vᵢ; bᵢ] (r = 2d) and W = blockdiag(I_d, C),
// or zᵢ = vᵢ (r = d) and W = I_d + C when B = V. The marginal kernel
// K = L(I + L)⁻¹ = I − (I + L)⁻¹ gives P(A ⊆ Y) = det K_A. With
// E = I + D and the push-through form of Woodbury's identity (no inverse of
// W is needed, so C may be singular),
//
//	(E + ZᵀWZ)⁻¹ = E⁻¹ − E⁻¹Zᵀ(I_r + W Z E⁻¹ Zᵀ)⁻¹ W Z E⁻¹,
//
// so K is a diagonal plus a rank-r term:
//
//	K_ij = [i = j]·κᵢ + ẑᵢᵀ X ẑⱼ,  κᵢ = δᵢ/(1 + δᵢ),  ẑᵢ = zᵢ/(1 + δᵢ),
//	X = (I_r + W G)⁻¹ W,  G = Σᵢ zᵢzᵢᵀ/(1 + δᵢ)  (r×r, O(n·r²) once).
//
// The sampler visits the items in order and decides each with its
// conditional probability given the decisions so far (the sequential,
// Cholesky-like view of Poulson): the probability of item i is the current
// K_ii, and after the decision the remaining kernel is the Schur complement
// of K − J in the decided items (J has a 1 for every excluded item). For
// K of the form above the Schur complement keeps the form, with the
// diagonal κ unchanged and X updated by a rank-one term:
//
//	pᵢ = κᵢ + ẑᵢᵀXẑᵢ,  include i with probability pᵢ,
//	πᵢ = pᵢ if included, pᵢ − 1 if not,  X ← X − (Xẑᵢ)(ẑᵢᵀX)/πᵢ.
//
// That is the linear-time Cholesky-based sampler of Han et al. for the
// low-rank NDPP, here with the diagonal. Each step is O(r²), so a sample
// costs O(n·r²) and memory is O(r²) beyond the model: ẑᵢ is formed from the
// model's rows as it is needed. πᵢ is never zero: an item is included only
// when u < pᵢ (so πᵢ = pᵢ > 0) and excluded only when pᵢ ≤ u < 1 (so
// πᵢ < 0).
//
// # Blocks
//
// Options.Block items are decided together: with the block's rows stacked
// in Ẑ_b, the b×b kernel K_b = diag(κ) + Ẑ_b X Ẑ_bᵀ is formed with
// matrix–matrix products, the items are decided one after the other by the
// same rule on K_b (an LU factorisation without pivoting of M = K_b − J_b
// whose pivots are the πᵢ), and X is updated once per block,
//
//	X ← X − (XẐ_bᵀ) M⁻¹ (Ẑ_b X),
//
// by two triangular solves and one product (blas.Gemm and the backend's
// Dtrsm). The decisions are those of the one-item steps (the Schur
// complement of a block is the composition of its items' Schur
// complements); only the rounding differs. Block 1 runs the one-item steps
// in plain loops.
//
// # Conditioning
//
// Given(A) returns a sampler of the distribution of Y given A ⊆ Y: the items
// of A are decided first, each forced in (πᵢ = pᵢ, the conditional
// probability that it is in Y given the previous ones), which leaves the X
// of the conditional process over the other items; P(A ⊆ Y) = det K_A is the
// product of those pᵢ. A set whose conditional probabilities fall below
// MinGivenProb is refused as having probability zero.
//
// # Randomness
//
// Samples draw one uniform number per item not given, in item order, from
// the *rand.Rand they are handed: the same generator state gives the same
// sample. ExpectedSize is E|Y| = |A| + tr K^A for the (conditional) kernel,
// for checks.
//
// # References
//
//   - I. Han, M. Gartrell, J. Gillenwater, E. Dohmatob, A. Karbasi. Scalable
//     Sampling for Nonsymmetric Determinantal Point Processes. ICLR 2022
//     (the linear-time Cholesky-based sampler for the low-rank kernel).
//   - J. Poulson. High-performance sampling of generic determinantal point
//     processes. Philosophical Transactions of the Royal Society A 378
//     (2020), arXiv:1905.00165 (sampling as an LU factorisation with
//     decisions at the pivots, for non-Hermitian kernels too).
//   - docs/math.md in the repository (the model and its diagonal).
package sample
