package detcache

import (
	"math"

	"github.com/ndpp-go/ndpp/internal/f64"
	"github.com/ndpp-go/ndpp/ndpp"
)

// Conditioning: the error scale of M⁻¹, refactors and direct mode.

// checkAfterUpdate runs after a low-rank update: a periodic refactor
// (measuring drift), or an early one when the equilibrated condition number
// of L_S exceeds MaxCond.
func (o *Fast) checkAfterUpdate() {
	o.setLogDetE()
	kappa, einv := o.cond(o.inv)
	tooLarge := o.setCond(kappa, einv, false)
	if o.since >= RefactorEvery || tooLarge || o.kacc > RefactorEvery*math.Max(kappa, 1) {
		o.refactor(true)
	}
}

// setLogDetE records log det of the equilibrated L_S.
func (o *Fast) setLogDetE() {
	o.logDetE = o.logDet
	for _, l := range o.logz2[:len(o.items)] {
		o.logDetE -= l
	}
}

// setCond records the condition number κ of the equilibrated L_S and the
// norm of its inverse, which scale the error bounds of the identities.
// Rounding errors of M⁻¹ accumulate over low-rank updates, each adding
// about κ·ε at the κ of its time, so γ = GammaSafety·ε·Σκ sums κ since the
// last refactor (reset). It reports whether κ exceeds MaxCond (or is not
// finite).
func (o *Fast) setCond(kappa, einv float64, reset bool) (tooLarge bool) {
	if reset {
		o.kacc = 0
	}
	// Entry errors of L_S are about ε·cw in equilibrated units, so an
	// inverse with a large norm amplifies them even when κ is small (L_S
	// tiny against its items' norms): κ_eff = max(κ, cw·‖E⁻¹‖₁).
	kappa = math.Max(kappa, o.cw*einv)
	o.kacc += math.Max(kappa, 1)
	o.gamma = GammaSafety * o.kacc * eps
	o.einv = einv
	return !(kappa <= MaxCond)
}

// cond returns the 1-norm condition number of the equilibrated kernel
// E = Λ⁻¹MΛ⁻¹, Λ = diag(‖zᵢ‖), given M⁻¹ (E⁻¹ = ΛM⁻¹Λ), and ‖E⁻¹‖₁, in
// O(k²).
func (o *Fast) cond(inv []float64) (kappa, einv float64) {
	k, ld := len(o.items), o.cap
	col := o.col[:k]
	colMax := func() float64 {
		mx := 0.0
		for _, x := range col {
			if !(x <= mx) {
				mx = x
			}
		}
		return mx
	}
	for j := range col {
		col[j] = 0
	}
	for i := 0; i < k; i++ {
		zi := o.izn[i]
		for j, x := range o.mk[i*ld : i*ld+k] {
			col[j] += math.Abs(x) * zi * o.izn[j]
		}
	}
	n1 := colMax()
	for j := range col {
		col[j] = 0
	}
	for i := 0; i < k; i++ {
		zi := o.znorm[i]
		for j, x := range inv[i*ld : i*ld+k] {
			col[j] += math.Abs(x) * zi * o.znorm[j]
		}
	}
	n2 := colMax()
	return n1 * n2, n2
}

// refactor recomputes log det M and M⁻¹ from M with a fresh LU, O(k³).
// With measure, the difference from the incrementally updated inverse and
// log-determinant is recorded in Stats. A singular or ill-conditioned M
// (condition number above MaxCond) switches to direct mode.
func (o *Fast) refactor(measure bool) {
	k, ld := len(o.items), o.cap
	o.since = 0
	if k == 0 {
		o.direct, o.logDet, o.logDetE, o.value = false, 0, 0, ndpp.Value{}
		o.setCond(1, 1, true)
		return
	}
	o.stats.Refactors++
	for i := 0; i < k; i++ {
		copy(o.tmp[i*ld:i*ld+k], o.mk[i*ld:i*ld+k])
	}
	logAbs, sign := f64.Inverse(o.tmp, k, ld, o.piv, o.lu) // lu: the inverse's scratch
	if sign <= 0 || !isFinite(logAbs) {
		o.enterDirect()
		return
	}
	if kappa, einv := o.cond(o.tmp); o.setCond(kappa, einv, true) {
		o.enterDirect()
		return
	}
	if measure && !o.direct {
		diff, size := 0.0, 0.0
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				f := o.tmp[i*ld+j]
				diff = math.Max(diff, math.Abs(o.inv[i*ld+j]-f))
				size = math.Max(size, math.Abs(f))
			}
		}
		if size > 0 {
			o.stats.MaxDrift = math.Max(o.stats.MaxDrift, diff/size)
		}
		o.stats.MaxLogDetDrift = math.Max(o.stats.MaxLogDetDrift, math.Abs(o.logDet-logAbs))
	}
	for i := 0; i < k; i++ {
		copy(o.inv[i*ld:i*ld+k], o.tmp[i*ld:i*ld+k])
	}
	o.direct = false
	o.logDet = logAbs
	o.value = ndpp.Value{Log: logAbs}
	o.setLogDetE()
}

// enterDirect switches to direct mode; the value of S comes from a fresh LU
// (ndpp's zero rule).
func (o *Fast) enterDirect() {
	o.direct = true
	o.logDet = 0
	o.setS()
	o.value, o.lbuf = rowsValue(o.setRows, o.maxRank, o.hasDiag, o.lbuf)
}

// rebuild recomputes M from the rows of S (set by the caller) and
// refactors.
func (o *Fast) rebuild() {
	ld, k := o.cap, len(o.items)
	for i := 0; i < k; i++ {
		ri := o.sRow(i)
		for j := 0; j < k; j++ {
			o.mk[i*ld+j] = entryRows(ri, o.sRow(j), i == j && o.hasDiag)
		}
	}
	o.refactor(false)
}
