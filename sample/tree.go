package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	gblas "gonum.org/v1/gonum/blas"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/internal/memlimit"
)

// DefaultLeaf is the number of items per leaf of a TreeSampler when
// TreeOptions.Leaf is 0.
const DefaultLeaf = 128

// TreeOptions configures a TreeSampler.
type TreeOptions struct {
	// Leaf is the number of items per leaf (0 = DefaultLeaf). The tree has
	// 2⌈n/Leaf⌉ − 1 nodes of ρ(ρ+1)/2 float64s each: larger leaves hold
	// less memory and cost more per pick (about Leaf·|E| operations at the
	// leaf against |E|² per level, for a proposal of |E| items).
	Leaf int
	// MaxMemory is the memory budget in bytes that TreeMemory's estimate
	// is checked against before anything is allocated (0: 3/4 of the
	// machine's or the process's memory limit). A refusal wraps
	// ndpp.ErrMemoryBudget.
	MaxMemory int64
}

// TreeMemory returns the estimated bytes of a TreeSampler over n items for
// a proposal of rank rho (at most r = 2d, or d when B = V) with leaves of
// leaf items: the items' coordinates (n·ρ float64s), the nodes' packed
// symmetric matrices ((2⌈n/leaf⌉ − 1)·ρ(ρ+1)/2 float64s), the node
// records and the build's buffers. It returns −1 when the estimate
// overflows an int64 or an argument is not positive (a budget refuses it).
func TreeMemory(n, rho, leaf int) int64 {
	if n <= 0 || rho < 0 || leaf <= 0 {
		return -1
	}
	nn, rr := int64(n), int64(rho)
	nodes := 2*((nn+int64(leaf)-1)/int64(leaf)) - 1
	return memlimit.Sum(memlimit.Bytes(nn, rr, 8), memlimit.Bytes(nodes, rr*(rr+1)/2, 8), memlimit.Bytes(nodes, 16),
		memlimit.Bytes(gramChunk, 3*rr, 8), memlimit.Bytes(rr, rr, 8))
}

// tnode is a node of the tree: the items [lo, hi) and its children (−1
// for a leaf).
type tnode struct {
	lo, hi      int32
	left, right int32
}

// TreeSampler draws exact samples of the NDPP of a model without a
// diagonal by rejection from the DPP of its Proposal L̂, after Han et
// al. (ICLR 2022): each proposal takes the elementary DPP of the
// eigenvectors of L̂ kept with probability λⱼ/(1 + λⱼ), whose items are
// drawn one at a time by a descent of a binary tree over the items whose
// nodes hold the sums Σ φᵢφᵢᵀ of their items' coordinates (packed upper
// triangles), and is kept with probability det L_Y / det L̂_Y (in log
// space). A proposal costs O(|E|·(|E|²·log(n/Leaf) + Leaf·|E|)) for |E|
// eigenvectors, independent of n beyond the logarithm; the mean number of
// proposals per sample is Proposal.ExpectedTries. See docs/math.md, "The
// tree sampler". A TreeSampler is not safe for concurrent use; Clone
// returns one for another goroutine, sharing the tree.
type TreeSampler struct {
	p          *Proposal
	n, rho, pk int
	leaf       int
	phi        []float64 // φᵢ, by leaf: leaf ℓ's ρ×b block (row j = coordinate j of its b items) at ℓ·Leaf·ρ
	nodes      []tnode
	mats       []float64 // node t: mats[t·pk : (t+1)·pk]
	root       int32

	// Scratch.
	e    []int
	pidx []int32   // packed offsets of E's pairs (a ≤ b)
	qc   []float64 // Q's coefficients over E's pairs
	q    []float64 // Q = I − CᵀC over E (k×k)
	cb   []float64 // orthonormal rows c_s (k each) of the chosen items
	v    []float64
	nrm  []float64
	phis []float64
	buf  []float64
	all  []int // 0, 1, …, ρ−1

	stats Stats
}

// leafTries bounds the draws within a leaf (per item of the leaf) before
// the leaf's weights are computed outright (rounding can leave a leaf
// whose items all have weights near zero).
const leafTries = 64

// NewTree builds the tree sampler of the proposal p: the items'
// coordinates φᵢ = T zᵢ (O(n·r·ρ)) and the nodes' sums (O(n·ρ²) at the
// leaves, O((n/Leaf)·ρ²) above), in chunks, checking ctx between them. It
// checks TreeMemory against opt.MaxMemory first.
func NewTree(ctx context.Context, p *Proposal, opt TreeOptions) (*TreeSampler, error) {
	if p == nil {
		return nil, errors.New("sample: nil proposal")
	}
	leaf := opt.Leaf
	if leaf == 0 {
		leaf = DefaultLeaf
	}
	if leaf < 0 {
		return nil, fmt.Errorf("sample: leaf size %d; need ≥ 1 (0 = default)", leaf)
	}
	n, rho, r := p.m.N(), p.rho, p.r
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("sample: tree over n = %d items; at most %d", n, math.MaxInt32)
	}
	budget := memlimit.Given(opt.MaxMemory, "sample.TreeOptions.MaxMemory")
	if err := budget.Check(fmt.Sprintf("a sampling tree over n = %d items (rank %d, leaves of %d)", n, rho, leaf), TreeMemory(n, rho, leaf)); err != nil {
		return nil, err
	}
	ts := &TreeSampler{p: p, n: n, rho: rho, pk: rho * (rho + 1) / 2, leaf: leaf, root: -1}
	ts.alloc()
	if rho == 0 {
		return ts, nil
	}
	// The nodes, in post-order (children before parents), and each
	// leaf's node.
	nl := (n + leaf - 1) / leaf
	ts.nodes = make([]tnode, 0, 2*nl-1)
	leafNode := make([]int32, nl)
	var build func(a, b int) int32
	build = func(a, b int) int32 {
		if b-a == 1 {
			idx := int32(len(ts.nodes))
			ts.nodes = append(ts.nodes, tnode{lo: int32(a * leaf), hi: int32(min(n, (a+1)*leaf)), left: -1, right: -1})
			leafNode[a] = idx
			return idx
		}
		mid := (a + b) / 2
		l, rt := build(a, mid), build(mid, b)
		idx := int32(len(ts.nodes))
		ts.nodes = append(ts.nodes, tnode{lo: ts.nodes[l].lo, hi: ts.nodes[rt].hi, left: l, right: rt})
		return idx
	}
	ts.root = build(0, nl)
	// φ for a chunk of whole leaves at a time (item-major, one product),
	// each leaf's Σ φᵢφᵢᵀ from it (packed), then its block transposed.
	ts.phi = make([]float64, n*rho)
	ts.mats = make([]float64, len(ts.nodes)*ts.pk)
	chunk := leaf * max(1, gramChunk/leaf)
	z := make([]float64, chunk*r)
	rows := make([]float64, chunk*rho)
	full := make([]float64, rho*rho)
	for lo := 0; lo < n; lo += chunk {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sample: tree: %w", err)
		}
		hi := min(lo+chunk, n)
		for i := lo; i < hi; i++ {
			rawZ(p.m, i, z[(i-lo)*r:(i-lo+1)*r])
		}
		blas.Gemm(gblas.NoTrans, gblas.Trans, hi-lo, rho, r, 1, z, r, p.t, r, 0, rows, rho)
		for a := lo; a < hi; a += leaf {
			b := min(a+leaf, n)
			blk := rows[(a-lo)*rho : (b-lo)*rho]
			blas.Syrk(gblas.Trans, rho, b-a, 1, blk, rho, 0, full, rho)
			idx := int(leafNode[a/leaf])
			dst := ts.mats[idx*ts.pk : (idx+1)*ts.pk]
			for i := 0; i < rho; i++ {
				o := packOff(rho, i, i)
				copy(dst[o:o+rho-i], full[i*rho+i:(i+1)*rho])
			}
			out := ts.phi[a*rho : b*rho]
			nb := b - a
			for i := 0; i < nb; i++ {
				for j, x := range blk[i*rho : (i+1)*rho] {
					out[j*nb+i] = x
				}
			}
		}
	}
	for idx, nd := range ts.nodes {
		if nd.left < 0 {
			continue
		}
		dst := ts.mats[idx*ts.pk : (idx+1)*ts.pk]
		ml := ts.mats[int(nd.left)*ts.pk : (int(nd.left)+1)*ts.pk]
		mr := ts.mats[int(nd.right)*ts.pk : (int(nd.right)+1)*ts.pk]
		for i := range dst {
			dst[i] = ml[i] + mr[i]
		}
	}
	return ts, nil
}

// coords writes the coordinates j ∈ e of φᵢ into dst (len(e)).
func (ts *TreeSampler) coords(i int, e []int, dst []float64) {
	lo := i - i%ts.leaf
	nb := min(ts.leaf, ts.n-lo)
	blk := ts.phi[lo*ts.rho:]
	o := i - lo
	for a, j := range e {
		dst[a] = blk[j*nb+o]
	}
}

// packOff returns the offset of entry (a, b), a ≤ b, of a packed upper
// triangle of order n (row-major).
func packOff(n, a, b int) int { return a*n - a*(a-1)/2 + (b - a) }

// alloc sizes the scratch buffers.
func (ts *TreeSampler) alloc() {
	rho := ts.rho
	ts.e = make([]int, 0, rho)
	ts.pidx = make([]int32, ts.pk)
	ts.qc = make([]float64, ts.pk)
	ts.q = make([]float64, rho*rho)
	ts.cb = make([]float64, rho*rho)
	ts.v = make([]float64, rho)
	ts.nrm = make([]float64, ts.leaf)
	ts.phis = make([]float64, rho*rho)
	ts.buf = make([]float64, rho*rho)
	ts.all = make([]int, rho)
	for j := range ts.all {
		ts.all[j] = j
	}
}

// Clone returns a sampler of the same distribution with its own scratch
// buffers and zero Stats (the tree is shared, read-only).
func (ts *TreeSampler) Clone() *TreeSampler {
	c := *ts
	c.alloc()
	c.stats = Stats{}
	return &c
}

// Proposal returns the sampler's proposal.
func (ts *TreeSampler) Proposal() *Proposal { return ts.p }

// Leaf returns the number of items per leaf.
func (ts *TreeSampler) Leaf() int { return ts.leaf }

// Memory returns the bytes the tree holds (coordinates, node matrices and
// records).
func (ts *TreeSampler) Memory() int64 {
	return int64(len(ts.phi)+len(ts.mats))*8 + int64(len(ts.nodes))*16
}

// Stats returns the samples and proposals of this sampler (not of its
// clones).
func (ts *TreeSampler) Stats() Stats { return ts.stats }

// Sample draws one sample, Y sorted ascending. The random numbers drawn
// from rng depend on the proposals (ρ for the eigenvectors, then for each
// pick one per level and two per draw at the leaf, and one for the
// acceptance); the same generator state gives the same sample. Once ctx is
// done it stops (ctx is checked before each proposal) with no items and
// an error wrapping ctx.Err().
func (ts *TreeSampler) Sample(ctx context.Context, rng *rand.Rand) ([]int, error) {
	return ts.SampleInto(ctx, rng, nil)
}

// SampleInto is Sample appending to dst[:0].
func (ts *TreeSampler) SampleInto(ctx context.Context, rng *rand.Rand, dst []int) ([]int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return dst[:0], fmt.Errorf("sample: tree: %w", err)
		}
		y := ts.propose(rng, dst[:0])
		ts.stats.Tries++
		ok, err := ts.accept(rng, y)
		if err != nil {
			return y[:0], err
		}
		if ok {
			ts.stats.Samples++
			slices.Sort(y)
			return y, nil
		}
		dst = y
	}
}

// propose draws a sample of the DPP of L̂ into out.
func (ts *TreeSampler) propose(rng *rand.Rand, out []int) []int {
	e := ts.e[:0]
	for j, l := range ts.p.lambda {
		if rng.Float64()*(1+l) < l { // u < λ/(1 + λ)
			e = append(e, j)
		}
	}
	ts.e = e
	k := len(e)
	if k == 0 {
		return out
	}
	t := 0
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			ts.pidx[t] = int32(packOff(ts.rho, e[a], e[b]))
			t++
		}
	}
	np := t
	q := ts.q[:k*k]
	clear(q)
	for a := 0; a < k; a++ {
		q[a*k+a] = 1
	}
	for pick := 0; pick < k; pick++ {
		// Q's coefficients over the packed pairs (twice off the diagonal).
		t := 0
		for a := 0; a < k; a++ {
			ts.qc[t] = q[a*k+a]
			t++
			for b := a + 1; b < k; b++ {
				ts.qc[t] = 2 * q[a*k+b]
				t++
			}
		}
		// Each level computes the left child's weight; the right one's is
		// the rest of the parent's.
		node := ts.root
		wn := math.Max(0, ts.weight(node, np))
		for ts.nodes[node].left >= 0 {
			l, r := ts.nodes[node].left, ts.nodes[node].right
			wl := math.Max(0, ts.weight(l, np))
			wr := math.Max(0, wn-wl)
			if rng.Float64()*(wl+wr) < wl {
				node, wn = l, wl
			} else {
				node, wn = r, wr
			}
		}
		it := ts.pickLeaf(rng, node, pick, out)
		out = append(out, it)
		// The new orthonormal row: φ_it^E less its projection on the rows
		// so far (twice, for accuracy), normalised; Q ← Q − c cᵀ.
		v := ts.v[:k]
		ts.coords(it, e, v)
		for pass := 0; pass < 2; pass++ {
			for s := 0; s < pick; s++ {
				c := ts.cb[s*k : (s+1)*k]
				blas.Axpy(-blas.Dot(c, v), c, v)
			}
		}
		nv := math.Sqrt(blas.Dot(v, v))
		c := ts.cb[pick*k : (pick+1)*k]
		for a := range v {
			c[a] = v[a] / nv
		}
		for a := 0; a < k; a++ {
			blas.Axpy(-c[a], c, q[a*k:(a+1)*k])
		}
	}
	return out
}

// weight returns tr(Q Σ_node[E, E]) = Σᵢ∈node φᵢᴱᵀ Q φᵢᴱ for the packed
// pairs of E (np of them).
func (ts *TreeSampler) weight(node int32, np int) float64 {
	m := ts.mats[int(node)*ts.pk : (int(node)+1)*ts.pk]
	s := 0.0
	for t, o := range ts.pidx[:np] {
		s += ts.qc[t] * m[o]
	}
	return s
}

// pickLeaf draws an item of the leaf with probability ∝ φᵢᴱᵀ Q φᵢᴱ (the
// squared norm of φᵢᴱ off the chosen items' span): items ∝ ‖φᵢᴱ‖² ≥ that
// weight, each kept with probability weight/‖φᵢᴱ‖², so that the kept one
// has the weight's law (an item already chosen has weight 0).
func (ts *TreeSampler) pickLeaf(rng *rand.Rand, node int32, nc int, chosen []int) int {
	nd := ts.nodes[node]
	lo, hi := int(nd.lo), int(nd.hi)
	e, k, rho := ts.e, len(ts.e), ts.rho
	nrm := ts.nrm[:hi-lo]
	clear(nrm)
	nb := min(ts.leaf, ts.n-lo)
	blk := ts.phi[lo*rho:]
	for _, j := range e {
		for i, x := range blk[j*nb : j*nb+nb] {
			nrm[i] += x * x
		}
	}
	total := 0.0
	for _, x := range nrm {
		total += x
	}
	w := func(i int) float64 {
		if slices.Contains(chosen, i) {
			return 0
		}
		v := ts.v[:k]
		ts.coords(i, e, v)
		s := blas.Dot(v, v)
		for c := 0; c < nc; c++ {
			p := blas.Dot(ts.cb[c*k:(c+1)*k], v)
			s -= p * p
		}
		return s
	}
	for try := 0; try < leafTries*(hi-lo); try++ {
		u := rng.Float64() * total
		i := lo
		for ; i < hi-1; i++ {
			if u < nrm[i-lo] {
				break
			}
			u -= nrm[i-lo]
		}
		if nrm[i-lo] > 0 && rng.Float64()*nrm[i-lo] < w(i) {
			return i
		}
	}
	// The weights outright.
	best, sum := lo, 0.0
	for i := lo; i < hi; i++ {
		nrm[i-lo] = math.Max(0, w(i))
		sum += nrm[i-lo]
		if nrm[i-lo] > nrm[best-lo] {
			best = i
		}
	}
	if sum == 0 {
		return best
	}
	u := rng.Float64() * sum
	for i := lo; i < hi; i++ {
		if u < nrm[i-lo] {
			return i
		}
		u -= nrm[i-lo]
	}
	return best
}

// accept keeps the proposal y with probability det L_Y / det L̂_Y.
func (ts *TreeSampler) accept(rng *rand.Rand, y []int) (bool, error) {
	k := len(y)
	if k == 0 {
		return true, nil
	}
	rho := ts.rho
	all := ts.all[:rho]
	for i, it := range y {
		ts.coords(it, all, ts.phis[i*rho:(i+1)*rho])
	}
	ldHat, ok := ts.p.logDetHat(ts.phis[:k*rho], k, ts.buf)
	ld, sign, err := ts.p.m.LogDet(y)
	if err != nil {
		return false, fmt.Errorf("sample: tree: %w", err)
	}
	u := rng.Float64()
	if sign == 0 || !ok {
		return false, nil
	}
	return math.Log(u) < ld-ldHat, nil
}
