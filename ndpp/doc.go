// Package ndpp holds the nonsymmetric DPP model and the types every other
// package shares: Model (parameters V, B, C and an optional nonnegative
// diagonal; validation, LogDet, the normaliser, the likelihood, conditional
// gains and top-N, the mapping of rows to the tokens that name items in
// data), the item-as-vector types (Kernel, what the items of a stream
// share; Item, one item's id, v, b and δ; ItemCheck, their validation) and
// Value, a log-determinant with a zero flag. File formats live in their
// own packages (ndpp/npz, ndpp/baskets, ndpp/items) and import only this
// one.
//
// The kernel is L = D + VᵀV + BᵀCB with C = −Cᵀ (d×d) and D = diag(δ) ≥ 0
// (zero for a low-rank model), so L_ij = [i = j]δᵢ + vᵢ·vⱼ + bᵢᵀCbⱼ and
// det L_S ≥ 0 for every S; without a diagonal det L_S = 0 when |S| > 2d
// (MaxRank). Determinants are handled as log|det| with a sign that is 1 or
// 0 under a documented numerical zero rule (ZeroRcondFactor), computed by
// one equilibrated factorisation (LogDetEquilibrated). The normaliser
// log det(I + L) uses Sylvester's identity, O(nd²) and no inverse of C.
// The identities, with their derivations, are in docs/math.md in the
// repository ("Model", "Normaliser (Sylvester)", "A diagonal term").
//
// The log-likelihood of a set is the model's own, log P(S) =
// log det L_S − log det(L + I) (LogLikelihood; −Inf when det L_S = 0), and
// every command reports that figure under that name (score, serve's
// /v1/score, eval's and learn's test_ll). LogDetEps gives log det(L_S + εI),
// the regularised term that the learners maximise (ε = 1e-5, Gartrell et
// al.'s): finite for every set, also beyond MaxRank, and O(ε) from
// log det L_S otherwise; figures built on it carry "eps" in their name
// (eval.LogLikelihoodEps, test_ll_eps).
//
// A Model is immutable and may be shared by many goroutines; LogDets
// scores baskets in parallel. Things that change parameters (learners) own
// their own arrays and build new models.
//
// # References
//
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021.
//   - A. Reddy, T. Rohatgi et al. Online MAP Inference and Learning for
//     Nonsymmetric Determinantal Point Processes; One-Pass Algorithms for MAP
//     Inference of Nonsymmetric Determinantal Point Processes, ICML 2022.
//   - docs/math.md in the repository (the model, the normaliser, the
//     diagonal, conditional gains and the evaluation metrics).
package ndpp
