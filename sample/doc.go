// Package sample draws exact samples from a nonsymmetric DPP: a random
// subset Y of the n items with
//
//	P(Y) = det L_Y / det(I + L),  L = D + VᵀV + BᵀCB  (D diagonal, optional).
//
// Three samplers, all exact (no Markov chain), each checked against the
// enumerated law of small kernels:
//
//   - Sampler, the linear sampler: any size, O(n·r²) per sample for the
//     low-rank kernel (r = 2d, or d when B = V), conditioned on items
//     already included (Given). Its math is below.
//   - KSampler, fixed-size samples (the k-NDPP, P(Y) ∝ det L_Y over
//     |Y| = k, optionally given items): tries of the NDPP of t·L, kept
//     when they hold k items, with t chosen so that E|Y| = k; the mean
//     number of tries is ExpectedTries.
//   - TreeSampler, sublinear in n per sample after Han et al.: proposals
//     from the symmetric kernel L̂ = S + |A| (Proposal; no diagonal), with
//     det L̂_Y ≥ det L_Y for every Y,
//     drawn by descents of a binary tree over the items whose nodes hold
//     packed sums of the items' coordinates, kept with probability
//     det L_Y / det L̂_Y. The mean number of proposals is
//     Proposal.ExpectedTries = det(I + L̂)/det(I + L) (Han et al.'s
//     Theorem 2 in closed form when V ⊥ B). ChooseMethod says when it pays
//     against the linear sampler; TreeMemory what it holds (checked
//     against a budget before it allocates). Synthetic builds a random
//     kernel of the orthogonal kind it is for.
//
// The math of the conditional kernel, the k-NDPP's scale and size law,
// the proposal and its bound, and the tree: docs/math.md, "Sampling".
// Measured speed: BENCHMARKS.md in this folder.
//
// # The linear sampler
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
//     (the linear-time Cholesky-based sampler for the low-rank kernel; the
//     rejection sampler from a symmetric proposal with a tree, and the
//     orthogonal NDPP).
//   - J. B. Hough, M. Krishnapur, Y. Peres, B. Virág. Determinantal
//     processes and independence. Probability Surveys 3 (2006); A. Kulesza,
//     B. Taskar. Determinantal point processes for machine learning (2012),
//     Algorithm 1 (the spectral sampler of a symmetric DPP).
//   - J. Poulson. High-performance sampling of generic determinantal point
//     processes. Philosophical Transactions of the Royal Society A 378
//     (2020), arXiv:1905.00165 (sampling as an LU factorisation with
//     decisions at the pivots, for non-Hermitian kernels too).
//   - docs/math.md in the repository (the model and its diagonal;
//     "Sampling").
package sample
