// Package ndpp holds the nonsymmetric DPP model: parameters, validation,
// scoring, the normaliser, and the mapping of the model's rows to the
// tokens that name items in data (ids, Vocab). File formats live in their
// own packages: ndpp/npz reads and writes models, ndpp/baskets reads basket
// data and splits it.
//
// # Model
//
// Item i has embeddings vᵢ, bᵢ ∈ Rᵈ (columns of V and B, d×n) and the kernel
// is
//
//	L = VᵀV + BᵀCB,  C = −Cᵀ (d×d),
//
// so L_ij = vᵢ·vⱼ + bᵢᵀCbⱼ. With zᵢ = [vᵢ; bᵢ] and W = blockdiag(I_d, C),
// L_S = Z_SᵀWZ_S. The symmetric part of L is PSD and the skew part adds no
// negative real eigenvalue, so det L_S ≥ 0 for every S, and det L_S = 0 when
// |S| > 2d (rank L ≤ 2d). Determinants are handled as log|det| with a sign
// that is 1 or 0 under a documented numerical zero rule (ZeroRcondFactor).
//
// A model may add a nonnegative diagonal (WithDiag):
//
//	L = D + VᵀV + BᵀCB,  D = diag(δ₁ … δₙ), δᵢ ≥ 0.
//
// Only the diagonal entries change, L_ii = δᵢ + ‖vᵢ‖², so every identity
// below keeps its form; sets larger than 2d can then have det L_S > 0
// (MaxRank), and each item's inclusion rate is no longer tied to its
// embeddings: with V = B = 0 the model is the independent-items model,
// P(i ∈ Y) = δᵢ/(1 + δᵢ).
//
// # Log-likelihood
//
// The log-likelihood of a set is the model's own, log P(S) =
// log det L_S − log det(L + I) (LogLikelihood, LogDet − LogNormalizer), −Inf
// when det L_S = 0; the commands (score, serve's /v1/score, eval's and
// learn's test_ll) report this figure under that name. LogDetEps gives
// log det(L_S + εI), the regularised basket term that the learners
// maximise (ε = 1e-5, Gartrell et al.'s): finite for every set, also beyond
// MaxRank, and O(ε) from log det L_S otherwise. Figures built on it always
// carry "eps" in their name (learn.LogLikelihoodEps, test_ll_eps).
//
// # Normaliser
//
// Sylvester's identity gives det(I_n + L) = det(I_2d + WG) with the 2d×2d
// Gram matrix G = ZZᵀ: O(nd²) once, O(d³) after, and no inverse of C (the
// Woodbury form log det(C⁻¹ + …) + log det C fails for odd d and singular C).
// With a diagonal,
//
//	log det(I + L) = Σᵢ log(1 + δᵢ) + log det(I_2d + W G_δ),  G_δ = Σᵢ zᵢzᵢᵀ/(1 + δᵢ),
//
// the same cost.
//
// # Items and tokens
//
// Items are rows 0…n−1. A model may record how data files name them:
// distinct integer ids (WithIDs) or a vocabulary of string tokens
// (WithVocab, Vocab); model files keep both, and TokenVocab and Token map
// between rows and tokens for readers and writers of data.
//
// # Concurrency
//
// A Model is immutable and may be shared by many goroutines; LogDets scores
// baskets in parallel. Things that change parameters (learners) own their
// own arrays and build new models.
//
// # References
//
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021.
//   - A. Reddy, T. Rohatgi et al. Online MAP Inference and Learning for
//     Nonsymmetric Determinantal Point Processes; One-Pass Algorithms for MAP
//     Inference of Nonsymmetric Determinantal Point Processes, ICML 2022.
package ndpp
