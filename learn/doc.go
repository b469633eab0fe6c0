// Package learn fits nonsymmetric DPPs to baskets: a one-pass online
// learner (Online, TrainOnline) and the offline minibatch learner
// (TrainOffline, and FullBatch for distributed gradients). Package eval
// measures the models it learns; learn/RESULTS.md holds the measurements.
//
// By default both learners fit a kernel with a diagonal,
// L = Δ + VᵀV + BᵀCB with C = D − Dᵀ skew (Params), which starts at the
// independent-items model (eval.Independent) and adds the items'
// interactions; LowRank fits Gartrell et al.'s L = VᵀV + BᵀCB, and Shared
// their B = V. They maximise the regularised basket term
// log det(L_S + εI) − log det(L + I) (ε = eval.DefaultEps, finite for
// every basket) minus a penalty on the embeddings; validation and traces
// score it with eval.LogDetsEps. Every gradient block is checked against
// finite differences in the tests; the parameterisation, the gradients
// (L_S is not symmetric) and the normaliser through Sylvester's identity
// are in docs/math.md ("The learners").
//
// The online learner reads any baskets.Source once, in memory O(nd + d²)
// whatever the number of baskets, the catalogue growing with the distinct
// items seen (rows in order of first appearance, ids kept). Per basket it
// costs O(|S|²d + |S|d²); the full normaliser (NormExact, the default) is
// refactored on a second goroutine on a fixed Schedule, so the parameters
// never depend on scheduling. A checkpoint (Save, written atomically in the
// project's checksummed binary format; layout in checkpoint.go) holds
// everything that influences later steps, with a fingerprint of the baskets
// consumed, so resuming (LoadOnline, SkipConsumed, Run) gives the same
// parameters bit for bit as not stopping, and a stream that does not start
// with the baskets consumed is refused.
//
// The offline learner takes minibatch Adam steps over baskets scored in
// parallel, with the exact normaliser each step, validation once per pass
// (at least DefaultMinEvalEvery steps apart), learning-rate decay and
// early stopping (OfflineOptions). Its objective
// adds to the likelihood a next-item term that ranks each training
// basket's last item by its exact conditional gain against sampled items
// (light by default, and the check of the best validation likelihood of
// the parameters averaged over the last quarter pass is returned;
// ObjectiveRank weights it for ranking, trains first
// with a strong setting, RankStrong, and selects on validation ranking
// above a likelihood floor); FitMoments starts B and C at co-occurrence
// moments.
// Options that move the trade-off: the regulariser and its penalty on rare
// items' embeddings (Alpha, Beta, RegPower), a learning rate that falls
// after the first checks (EarlyDecay) and validating a moving average of
// the parameters (Average).
// The online learner can add the same term to each basket's step
// (OnlineOptions.NextWeight).
// The trade-off between likelihood and ranking is measured in
// learn/TRADEOFF.md, the targets in learn/RANKING.md; the math in
// docs/math.md ("The next-item objective").
//
// The small dense products and Adam's update run on internal/f64's kernels
// (adam.go); which kernel computes a row is fixed by the shapes, so
// results do not depend on scheduling.
//
// # Cancellation
//
// TrainOnline, Online.Run, TrainOffline, BasketGradient and FullBatch.Step
// take a context.Context: they check it at least every basket (online),
// every iteration (offline), every 64 baskets (BasketGradient) or every
// chunk of 32 baskets scored for a log-likelihood (validation, trace), and
// return an error wrapping ctx.Err() with no goroutine of theirs left
// running.
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
//   - docs/math.md in the repository (the normaliser, the gradients of the
//     basket term, the diagonal and the learners).
package learn
