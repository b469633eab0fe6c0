// Package eval measures models of baskets the way the NDPP papers do — the
// test log-likelihood, MPR, AUC and Prec@k of a model on held-out baskets —
// and holds the comparison models an NDPP is measured against: the
// independent-items model (and popularity, its ranking), item
// co-occurrence and a latent class model. It does not depend on how a
// model was fitted; the learners (package learn) score their validation
// baskets with its log-likelihoods.
//
// # Held-out baskets
//
// Every command that holds out baskets — ndpp-bench learn (online, as the
// file streams by, and offline) and demo — holds them out by one rule,
// baskets.HoldOut: seeded reservoir sampling over the baskets in the
// file's order, nVal validation and nTest test baskets (300 and 2,000 by
// default, as in the papers), every other basket a training basket, passed
// on in the file's order apart from the reservoir's delays.
// baskets.HoldOutSlice gives the same split of baskets in memory. The same
// file and seed therefore give the same test baskets to learn and demo
// (tested), and the figures of learn/RESULTS.md and learn/RANKING.md are of
// this split. eval --train takes its training and test files as given, and
// the Beam Learn pipeline trains on every basket it reads (it holds none
// out). docs/math.md states the rule beside the metrics.
//
// The protocol holds out one item of each test basket, the one with the
// highest item id (Options.Key: Keys gives the ids of a vocabulary of
// integer tokens; otherwise the rows are the ids). HeldOut applies that
// rule to one basket and LastSource to a stream, for the learners'
// next-item terms, which hold out the same item of their training baskets.
//
// # Log-likelihoods
//
// The log-likelihood of a basket is the model's own, log P(S) =
// log det L_S − log det(L + I) (ndpp.Model.LogLikelihood; −Inf when
// det L_S = 0): Metrics.TestLL, and every command's log_likelihood or
// test_ll. The learners maximise a regularised term instead, always named
// with "Eps": log det(L_S + εI) − log det(L + I) with ε = 1e-5
// (DefaultEps), as in Gartrell et al.'s code (LogLikelihoodEps,
// LogDetsEps). The symmetric part of L_S + εI is at least εI, so the term
// is finite for every basket, also one larger than a low-rank kernel's
// rank; for other baskets it differs from log P(S) by O(ε). Validation and
// traces (package learn), Metrics.TestLLEps and the AUC's basket scores
// use it, so early stopping and those figures are finite and comparable;
// Metrics.BeyondRank counts the test baskets whose probability under a
// low-rank model is 0 (TestLL −Inf) and whose ε term is finite only
// through ε.
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
// and AUCPaired. IndependentBaseline evaluates the independent-items model
// of the training baskets the same way: its conditional gains rank items by
// popularity.
//
// The co-occurrence baseline (Cooccurrence, CooccurrenceBaseline) ranks the
// held-out item by how often each candidate j appeared with the rest Y of
// the basket in training, through the same ranking code as a model's
// gains: s_j = Σ_{y∈Y} c(j, y)/√(c(j)·c(y)) (cosine; c(j) counts the
// training baskets holding j, c(j, y) those holding both; of the
// normalisations of CooccurNorm it ranks best or near best on every set
// measured, learn/RESULTS.md). Candidates
// that tie, in particular those never seen with an item of Y (s_j = 0),
// are ordered by c(j), so every candidate outside Y keeps its place in the
// percentile rank's denominator and none is dropped by the s_j ≠ 0 rule.
// It scores candidates, not baskets: it has no log-likelihood, and no AUC.
// Pair counts are held within a budget of pairs whatever the number of
// baskets (exact below it, space-saving a batch at a time beyond), so an
// online learner's stream is counted in the same pass
// (Cooccurrence.Counting). The latent
// class baseline (LatentClass, LatentClassBaseline) is a mixture of
// DefaultLatentClasses independent-items models fitted by EM, evaluated
// with its exact log-likelihood and its gains P(Y+j)/P(Y). Co-occurrence
// ranks above the learned NDPPs on the real sets measured, though kernels
// of the family rank like it (docs/math.md, "Kernels of the family that
// rank like co-occurrence"; learn/RANKING.md measures how close the
// learner's next-item objective comes).
//
// # A model beside the baselines (Compare)
//
// Compare evaluates models and, on the same test baskets, the baselines
// their training data allows: the independent-items model (popularity's
// ranking), co-occurrence and the latent class model from the training
// baskets, or, for a training stream that was not kept, the
// independent-items model and the co-occurrence counts kept as it went by
// (Training). It is the one call of every command that reports a model
// beside the baselines.
//
// Paired subtracts two evaluations of the same test baskets basket by
// basket (a model and a baseline, or two models): the mean difference of
// the log-likelihoods and of the percentile ranks (binned as MPR), with the
// standard error of that mean. A basket that is hard for one model is
// mostly hard for the other, so the paired standard error is far below the
// two figures' own (on UK Retail 0.04 nats against 1.9, and 0.25 MPR
// points against 0.6): it tells a real difference between two learners'
// models from the test baskets' noise.
//
// CheckDiverged refuses a learned model whose training diverged: its kernel
// overflows, or its log-likelihood on held-out baskets is far below the
// independent-items model's.
//
// # Cancellation
//
// Compare, Evaluate, IndependentBaseline, Cooccurrence.Evaluate, CooccurrenceBaseline,
// FitLatentClass, LatentClass.Evaluate, LatentClassBaseline, LogDetsEps,
// LogLikelihoodEps and CheckDiverged take a context.Context: they check it
// every chunk of 32 baskets scored for a log-likelihood, every chunk of
// next-item rankings or every 4096 baskets of EM, and return an error
// wrapping ctx.Err() with no goroutine of theirs left running.
//
// # References
//
//   - M. Gartrell, I. Han, E. Dohmatob, J. Gillenwater, V.-E. Brunel.
//     Scalable Learning and MAP Inference for Nonsymmetric Determinantal
//     Point Processes. ICLR 2021 (the protocol, the data).
//   - A. Metwally, D. Agrawal, A. El Abbadi. Efficient Computation of
//     Frequent and Top-k Elements in Data Streams. ICDT 2005 (the
//     space-saving pair counts).
//   - P. K. Agarwal, G. Cormode, Z. Huang, J. Phillips, Z. Wei, K. Yi.
//     Mergeable Summaries. PODS 2012 (space-saving merged a batch at a
//     time).
//   - docs/math.md in the repository (the metrics, and what a conditional
//     gain can express).
package eval
