package detcache

import (
	"fmt"
	"math"
)

// MarshalBinary saves the exact state (solution, M, M⁻¹, log det, mode and
// counters), so that a restored oracle continues bit-identically. The model
// is not saved: restore into an oracle built with the same model and
// capacity.
func (o *Fast) MarshalBinary() ([]byte, error) {
	var e encoder
	k, ld := len(o.items), o.cap
	encodeHeader(&e, magicFast, o.m.N(), o.d, o.cap)
	e.i64(int64(o.since))
	e.bool(o.direct)
	e.i64(int64(k))
	for _, it := range o.items {
		e.i64(int64(it))
	}
	e.f64(o.logDet)
	e.f64(o.kacc)
	e.f64(o.einv)
	e.f64(o.value.Log)
	e.bool(o.value.Zero)
	for i := 0; i < k; i++ {
		e.f64s(o.mk[i*ld : i*ld+k])
	}
	for i := 0; i < k; i++ {
		e.f64s(o.inv[i*ld : i*ld+k])
	}
	encodeStats(&e, o.stats)
	return e.finish(), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary. It returns an
// error for corrupt data and for a state saved with a different n, d or
// capacity; o is unchanged on error. Cands prepared before must be prepared
// again.
func (o *Fast) UnmarshalBinary(data []byte) error {
	dec, err := newDecoder(data, magicFast)
	if err != nil {
		return err
	}
	if err := decodeHeader(dec, o.m.N(), o.d, o.cap); err != nil {
		return err
	}
	since := dec.int("updates since refactor", 0, RefactorEvery)
	direct := dec.bool()
	k := dec.int("|S|", 0, o.cap)
	items := make([]int, k, o.cap)
	for i := range items {
		items[i] = dec.int("item", 0, o.m.N()-1)
	}
	logDet := dec.f64()
	kacc, einv := dec.f64(), dec.f64()
	var v Value
	v.Log = dec.f64()
	v.Zero = dec.bool()
	mk := make([]float64, k*k)
	inv := make([]float64, k*k)
	dec.f64s(mk)
	dec.f64s(inv)
	stats := decodeStats(dec)
	if err := dec.done(); err != nil {
		return err
	}
	if hasDup(items) {
		return fmt.Errorf("detcache: corrupt state: repeated item in S")
	}
	if !(kacc >= 1 && kacc <= math.MaxFloat64) || !(einv >= 0 && einv <= math.MaxFloat64) {
		return fmt.Errorf("detcache: corrupt state: condition record (%g, %g)", kacc, einv)
	}
	for _, x := range append(mk, inv...) {
		if !isFinite(x) {
			return fmt.Errorf("detcache: corrupt state: non-finite matrix entry")
		}
	}
	ld := o.cap
	o.items = items
	for p, it := range items {
		o.setRow(p, it)
		copy(o.mk[p*ld:p*ld+k], mk[p*k:(p+1)*k])
		copy(o.inv[p*ld:p*ld+k], inv[p*k:(p+1)*k])
	}
	o.logDet, o.value, o.direct, o.since, o.stats = logDet, v, direct, since, stats
	o.kacc, o.gamma, o.einv = kacc, GammaSafety*kacc*eps, einv
	o.setLogDetE()
	// Cands prepared before are refreshed on use. The version and stamps
	// only track this object's Cands, so they are not part of the state.
	o.version++
	o.chgN = -1
	return nil
}
