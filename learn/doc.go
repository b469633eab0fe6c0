// Package learn fits nonsymmetric DPPs to baskets — one-pass online
// learning and the offline (minibatch) baseline — and evaluates them with
// the metrics of the NDPP papers.
//
// # Model and parameters
//
// By default both learners fit a kernel with a diagonal,
//
//	L = Δ + VᵀV + BᵀCB,  Δ = diag(δᵢ), δᵢ = exp(θᵢ),
//
// with items as columns of V, B (d×n) and C = D − Dᵀ for a free d×d matrix
// D, so C stays skew-symmetric under any update (Params). LowRank (in
// OfflineOptions and OnlineOptions) fits Gartrell et al.'s L = VᵀV + BᵀCB;
// B = V is the shared variant of their experiments. A rank-2d kernel gives
// probability zero to every basket larger than 2d and ties each item's rate
// to its embeddings; the diagonal frees both, and with V = B = 0 it is the
// independent-items model (Independent), so a learner starts from that
// baseline and the embeddings add the items' interactions.
//
// The rows held are the item vectors over sᵢ = √(1 + δᵢ). With S = diag(sᵢ),
// I + L = S(I + ṼᵀWṼ)S (W = blockdiag(I, C)), so
//
//	log det(I + L) = Σᵢ log(1 + δᵢ) + log det(I_2d + W G̃),  G̃ = Σᵢ z̃ᵢz̃ᵢᵀ:
//
// the normaliser's Gram matrix is that of the rows held, and a change of δᵢ
// moves no other item's term. For a basket, with A = L_S + εI,
// ∂ log det A/∂δᵢ = (1 + (1 − ε)(A⁻¹)ᵢᵢ)/(1 + δᵢ) through Δ and sᵢ (basketWork.pieces).
//
// # Objective and evaluation convention
//
// The log-likelihood of a basket is the model's own, log P(S) =
// log det L_S − log det(L + I) (ndpp.Model.LogLikelihood; −Inf when
// det L_S = 0): Metrics.TestLL, and every command's log_likelihood or
// test_ll. The learners maximise a regularised term instead, always named
// with "Eps": log det(L_S + εI) − log det(L + I) with ε = 1e-5
// (DefaultEps), as in Gartrell et al.'s code (LogLikelihoodEps). The
// symmetric part of L_S + εI is at least εI, so the term is finite for
// every basket, also one larger than a low-rank kernel's rank; for other
// baskets it differs from log P(S) by O(ε). Validation (Result.ValLLEps),
// traces (TracePoint.NLL), Metrics.TestLLEps and the AUC's basket scores
// use it, so early stopping and those figures are finite and comparable;
// Metrics.BeyondRank counts the test baskets whose probability under a
// low-rank model is 0 (TestLL −Inf) and whose ε term is finite only
// through ε.
//
// # Gradients (L_S is not symmetric)
//
// For a basket S and A = L_S + εI, d log det A = tr(A⁻¹ dA) gives
//
//	∂/∂V_S = V_S (A⁻¹ + A⁻ᵀ)
//	∂/∂B_S = C B_S (A⁻¹ − A⁻ᵀ)
//	∂/∂C   = B_S A⁻ᵀ B_Sᵀ,  ∂/∂D = ∂/∂C − (∂/∂C)ᵀ.
//
// The seed paper prints 2·V_S·A⁻¹ and 2·C·B_S·A⁻¹, which hold only for a
// symmetric A. The basket-restricted normaliser log det(I + L_S) is the same
// with I + L_S, so a basket with both terms uses the single coefficient
// matrix P = A⁻¹ − (I + L_S)⁻¹. Per-item pieces (C·Σ… and Σ bᵢwᵢᵀ) are
// accumulated and applied once per item, keeping a basket at
// O(|S|²d + |S|³).
//
// The full normaliser uses Sylvester's identity
// det(I_n + L) = det(I_2d + WG), W = blockdiag(I, C), G = ZZᵀ (2d×2d, zᵢ =
// [vᵢ; bᵢ]); with A = I + WG its gradient is K zᵢ for item i,
// K = A⁻¹W + WᵀA⁻ᵀ, and (G[d:,:]·A⁻¹[:,d:])ᵀ for C. No inverse of C is
// needed. Both learners compute it in one place, the internal package
// exactnorm. Every block (V, B, D, shared B = V, the basket-restricted and
// the exact normaliser) is checked against finite differences in the
// tests. The derivations are in docs/math.md in the repository.
//
// # Online learner (Online, TrainOnline)
//
// One pass over any BasketSource (a file is streamed by a baskets.Reader,
// held-out baskets taken out of the stream by baskets.HoldOut); memory
// O(nd + d²) whatever the number of baskets; the catalogue grows with the
// distinct items seen (rows in order of first appearance, the ids kept).
// With a diagonal, δᵢ(t) = rᵢ(t)·exp(φᵢ) with rᵢ(t) = (μᵢ + 1)/(t − μᵢ + 1),
// the odds of the item's running frequency: the diagonal tracks each item's
// rate exactly from its first basket and φᵢ learns the correction; an
// item's embeddings are drawn at its first basket, at a small share of δᵢ,
// and Adam's steps on them are scaled by min(1, √(δᵢ/RateScale)), since
// their natural size is √δᵢ. Each basket S_t takes a gradient step on
//
//	ψ_t = log det(L_{S_t} + εI) − N_t − R(V_{S_t}, B_{S_t}),
//	R = α Σ ‖vᵢ‖²/μᵢ + β Σ ‖bᵢ‖²/μᵢ  (μᵢ: occurrences of i so far),
//
// updating only the basket's columns and C. N_t is either the paper's
// basket-restricted log det(I + L_{S_t}) (NormBasket) or the full
// log det(I + L) (NormExact, the default), through A = I + WG (Sylvester).
// Every Schedule.FactorEvery baskets (default 25) the learner hands the
// normaliser the columns changed since the previous snapshot and C; it
// brings G up to date (a symmetric rank-k update, or G = ZᵀZ anew when
// many columns changed and, to bound drift, every Schedule.RefreshEvery
// baskets once as many updates as items have passed), factors A and forms
// K and ∂/∂C; the result takes effect Schedule.Lag baskets (default
// min(FactorEvery, 70)) after its snapshot, at a fixed position, so the parameters
// do not depend on scheduling (FactorEvery = 1: every basket, the exact
// gradient, O(d³ + |S|d²) per basket). During Run a second goroutine
// computes the jobs meanwhile (blocked on a channel between them); a job
// it has not started when its result is due is run by the learner. Each
// item's K zᵢ is computed once per result, at the item's first occurrence
// after it (for small catalogues every item's as the result takes
// effect, four per pass over K), and kept in the item's row.
// Per basket the learner's goroutine then costs O(|S|²d + |S|d²): L_S
// (with the rows bᵢᵀC, from which C uᵢ follows in O(|S|²d)) and the
// optimiser, with ∂/∂C kept as pairs (bᵢ, wᵢ) and summed in one product
// per C step. The normaliser's gradient on column i is
// weighted by t/μᵢ: item i is updated on a fraction μᵢ/t of the steps while
// the full normaliser acts on every column at every step, so the weight makes
// the expected update the full objective's gradient. The basket-restricted
// normaliser has no such fix — nothing in it penalises the growth of
// log det(I + L) — and its models rank items but have a poor likelihood
// (measured in RESULTS.md). C's gradient is averaged over CEvery baskets
// per step. Optimisers: SGD and Adam with per-column moments and step
// counts, updated lazily only when the column is touched. A checkpoint
// (Save/SaveFile, written atomically) holds everything that influences
// later steps — parameters, moments, counts, the normaliser's state, the
// stream position, a fingerprint of the baskets consumed — so resuming
// (LoadOnline, SkipConsumed, Run) gives the same parameters bit for bit as
// not stopping (so does Run after it was stopped by its context), and a
// stream that does not start with the baskets consumed is refused.
// Checkpoints are states of the
// project's binary format (internal/binfmt: magic, version, CRC-32C; layout
// in checkpoint.go), written as they are encoded; a changed byte, a
// truncation or a checkpoint of an earlier version in another format is
// refused with an error saying which.
//
// # Offline learner (TrainOffline)
//
// Maximises (1/m) Σᵢ log det(L_{Sᵢ} + εI) − log det(L + I) − R(V, B) with
// minibatch Adam. The numerator is stabilised by ε = 1e-5 as in the
// reference code: the symmetric part of L_S + εI is at least εI, so the
// matrix is invertible and the term finite even for a rank-deficient
// basket. Minibatch baskets are scored in parallel (one accumulator per
// worker, merged after) by the online learner's basket computation
// (basketWork.pieces); the normaliser (G = ZᵀZ, the factorisation of A)
// is computed concurrently, ZK goes straight into the gradient, and C uᵢ
// and Σ bᵢwᵢᵀ over the baskets' items go through the four-vector
// products. C
// is learned (the reference's scalable code never trains it). With a
// diagonal, θ starts at the independent-items model of the training counts,
// each item's embeddings at half its δᵢ, and item steps are scaled by the
// rate as in the online learner. Each step's normaliser costs O(nd²)
// whatever the minibatch, so the default minibatch is max(800, n/4); the
// learning rate is DefaultOfflineLR = 0.05. The validation likelihood (the
// objective's ε convention) is checked once per pass; a pass without
// improvement halves the learning rate (LRDecay), and the best model is
// returned after Patience such passes.
//
// # Kernels
//
// The small dense products (four vectors times a matrix, four dot
// products, xᵀM, y += αx), Adam's update and the inverses with log|det| and
// sign (Gauss–Jordan, blocked for the 2d×2d normaliser) are internal/f64's
// kernels (row vectors times matrices through learn/internal/vecmat); vectors go through blas's short-vector kernels (Dot, Axpy,
// Ger). The four-vector and one-vector products sum in different orders;
// which of them computes a row is fixed by the shapes, so the results do
// not depend on scheduling.
//
// # Cancellation
//
// TrainOnline, Online.Run, TrainOffline, BasketGradient, FullBatch.Step,
// Evaluate, Baselines, Cooccurrence.Evaluate, CooccurrenceBaseline,
// LogLikelihoodEps and CheckDiverged take a context.Context: they check it
// at least every basket (online), every iteration (offline), every 64
// baskets (BasketGradient), every chunk of 32 baskets scored for a
// log-likelihood (validation, trace, LogLikelihoodEps) or every chunk of
// next-item rankings (Evaluate), and return an error wrapping ctx.Err()
// with no goroutine of theirs left running.
//
// # Evaluation (Evaluate)
//
// Test log-likelihood (mean log P(S), and the ε figure beside it), and MPR, AUC,
// Prec@5 and Prec@10 under two protocols: "paper", the reference code's
// (baskets deduplicated and sorted by item id, the highest-id item held out,
// items scored by the conditional gain s_j = L_jj − L_{j,Y}L_Y⁻¹L_{Y,j},
// PR = 1 − #{s_j ≥ s_t}/#{s_j ≠ 0}, AUC against one random basket of the same
// size per test basket, each figure the mean over three log-size buckets
// cut from the whole test split), and "micro", plain means over the test
// baskets. The paper's AUC ranks every test basket of a bucket against every
// random one, of other sizes too; since a basket's score falls by about
// log δᵢ per item, it follows the spread of sizes within the buckets as
// much as the model, and AUCPaired compares each basket with its own random
// basket only. Standard errors over the test baskets come with TestLL, TestLLEps, MPR
// and AUCPaired. Baselines evaluates the independent-items model of the training
// baskets the same way: its conditional gains rank items by popularity.
//
// The co-occurrence baseline (Cooccurrence, CooccurrenceBaseline) ranks the
// held-out item by how often each candidate j appeared with the rest Y of
// the basket in training, through the same ranking code as a model's
// gains: s_j = Σ_{y∈Y} c(j, y)/√(c(j)·c(y)) (cosine; c(j) counts the
// training baskets holding j, c(j, y) those holding both). Of the
// normalisations measured on UK Online Retail (CooccurNorm; paper MPR of
// the splits of seeds 1 and 2) — counts 82.7 and 82.9, /c(j) 83.4 and
// 83.3, /c(y) 85.4 and 85.4, /√c(j) 85.7 and 85.9, cosine 87.3 and 87.4 —
// the cosine ranks best (popularity: 73.5 and 73.8). Candidates
// that tie, in particular those never seen with an item of Y (s_j = 0),
// are ordered by c(j), so every candidate outside Y keeps its place in the
// percentile rank's denominator and none is dropped by the s_j ≠ 0 rule.
// It scores candidates, not baskets: it has no log-likelihood, and no AUC.
// Pair counts are held within a budget of pairs whatever the number of
// baskets (exact below it, space-saving beyond), so the online learner's
// stream is counted in the same pass (Cooccurrence.Counting). The
// learned NDPPs rank below it on UK Online Retail, the registries' apparel
// and 3-category sets, and 13 of 15 registry categories, and the latent
// class baseline (LatentClass, LatentClassBaseline: a mixture of
// DefaultLatentClasses independent-items models fitted by EM, evaluated
// with its exact log-likelihood and its gains P(Y+j)/P(Y)) beats them on
// likelihood and ranking (learn/RANKING.md): a conditional gain of this kernel family is bounded
// by a leverage against the basket that only falls as the basket grows
// (docs/math.md, "What a conditional gain can express"), where the counts
// add up.
//
// # References
//
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021 (offline learner, protocol, data).
//   - M. Gartrell, V.-E. Brunel, E. Dohmatob, S. Krichene. Learning
//     Nonsymmetric Determinantal Point Processes. NeurIPS 2019.
//   - A. Reddy, T. Rohatgi et al. Online MAP Inference and Learning for
//     Nonsymmetric Determinantal Point Processes (the online learner,
//     Alg. 4, whose printed gradients assume a symmetric L_S).
//   - D. P. Kingma, J. Ba. Adam: A Method for Stochastic Optimization.
//     ICLR 2015.
//   - J. Gillenwater, A. Kulesza, E. Fox, B. Taskar. Expectation-Maximization
//     for Learning Determinantal Point Processes. NIPS 2014 (the Amazon
//     baby-registry data).
//   - docs/math.md in the repository (the normaliser, the gradients of the
//     basket term, the diagonal and the metrics).
package learn
