package sample

import (
	"fmt"
	"math"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Method names a sampler of a model's NDPP.
type Method string

// The samplers.
const (
	// MethodAuto takes the tree sampler where its estimated work is the
	// smaller (ChooseMethod), else the linear one.
	MethodAuto Method = "auto"
	// MethodLinear is Sampler: O(n·r²) per sample, any kernel, given
	// items, fixed sizes (KSampler).
	MethodLinear Method = "linear"
	// MethodTree is TreeSampler: no diagonal, no given items, any size.
	MethodTree Method = "tree"
)

// ParseMethod reads a Method name.
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case MethodAuto, MethodLinear, MethodTree:
		return m, nil
	}
	return "", fmt.Errorf("sample: unknown method %q (auto, linear or tree)", s)
}

// treeOpWeight is what an operation of the tree sampler (a gather from a
// node matrix or a leaf, mostly missing the caches) is reckoned to cost
// against a multiply–add of the linear sampler's sweep (streaming, in
// cache-sized blocks): measured at 2 to 10 on this project's machines
// (sample/BENCHMARKS.md), taken at the top.
const treeOpWeight = 10

// LinearWork returns the linear sampler's work per sample, in
// multiply–adds: n·(r² + 2r) for the sweep over the n items (r = 2d, or d
// when B = V).
func LinearWork(m *ndpp.Model) float64 {
	r := float64(2 * m.D())
	if m.Shared() {
		r = float64(m.D())
	}
	return float64(m.N()) * (r*r + 2*r)
}

// TreeWork returns the tree sampler's estimated work for the proposal p
// with leaves of leaf items (0 = DefaultLeaf), in the linear sampler's
// multiply–adds: its build (the items' coordinates, n·r·ρ, and the leaves'
// sums, n·ρ²/2) and each sample (ExpectedTries proposals of k =
// ProposalSize picks, each one weight per level of the tree, k²/2
// operations, the leaf's k norms per item, and the orthogonalisation;
// then the two k×k determinants of the acceptance), the latter weighted
// by treeOpWeight.
func (p *Proposal) TreeWork(leaf int) (build, perSample float64) {
	if leaf <= 0 {
		leaf = DefaultLeaf
	}
	n, r, rho := float64(p.m.N()), float64(p.r), float64(p.rho)
	build = n*r*rho + n*rho*rho/2
	k := p.ProposalSize()
	depth := math.Max(1, math.Ceil(math.Log2(math.Max(1, n/float64(leaf)))))
	pick := depth*k*k/2 + float64(leaf)*k + 3*k*k
	proposal := rho + k*pick + k*k*float64(p.m.D()) + k*k*k
	return build, treeOpWeight * p.ExpectedTries() * proposal
}

// ChooseMethod returns MethodTree when the tree sampler's estimated work
// for count samples, its build included (TreeWork), is below the linear
// sampler's (LinearWork, count samples), else MethodLinear, with the two
// estimates in words. It does not look at memory: check TreeMemory
// against the budget too.
func ChooseMethod(p *Proposal, count, leaf int) (Method, string) {
	build, per := p.TreeWork(leaf)
	tree := build + float64(count)*per
	lin := float64(count) * LinearWork(p.m)
	why := fmt.Sprintf("estimated work for %d samples: tree %.3g (build %.3g, %.3g expected proposals each), linear %.3g", count, tree, build, p.ExpectedTries(), lin)
	if tree < lin {
		return MethodTree, why
	}
	return MethodLinear, why
}
