// Package exactnorm is the learners' exact normaliser: log det(I + L) of
// an NDPP kernel L = VᵀV + BᵀCB (with a diagonal, over the rows held; see
// package learn) and its gradient, through Sylvester's identity
// det(I_n + L) = det(I_2d + WG) with G = Σᵢ zᵢzᵢᵀ the 2d×2d Gram matrix of
// the columns zᵢ = [vᵢ; bᵢ] and W = blockdiag(I, C): with A = I + WG,
// ∂/∂zᵢ = K zᵢ for K = A⁻¹W + WᵀA⁻ᵀ, and ∂/∂C = (G[d:, :] A⁻¹[:, d:])ᵀ
// (docs/math.md in the repository).
//
// Work computes them from all columns at once (the offline and full-batch
// learners); Pipe keeps G up to date from the columns that change and
// delivers each result a fixed number of positions after its snapshot
// (the online learner), so results never depend on scheduling.
package exactnorm
