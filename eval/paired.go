package eval

import (
	"errors"
	"hash/fnv"
	"math"
)

// Difference is the difference a − b of two evaluations of the same test
// baskets (Paired), each figure the mean of the per-basket differences with
// the standard error of that mean. Two models scored on the same baskets
// err together: a basket that is hard for one is mostly hard for the
// other, so the standard error of their difference is usually well below
// the √(se_a² + se_b²) that the separate standard errors suggest. A
// figure that one of the evaluations lacks (the co-occurrence baseline's
// log-likelihood) is NaN.
type Difference struct {
	// TestLL and TestLLEps are the differences of Metrics.TestLL and
	// Metrics.TestLLEps (up to rounding: the means are over the same
	// baskets), in nats per basket; the SE fields their standard errors
	// (NaN when a difference is not finite).
	TestLL, TestLLSE       float64
	TestLLEps, TestLLEpsSE float64
	// MPR is the difference of the paper MPRs over the baskets both
	// evaluations predicted (Predicted; the same as the difference of
	// Metrics.MPR unless one of them skipped baskets the other did not), in
	// points, each of the three size bins' mean differences weighted as MPR
	// weights its bins; MPRSE is its standard error, the bins' standard
	// errors taken as independent, as Metrics.MPRSE.
	MPR, MPRSE float64
	// Predicted counts the baskets both evaluations predicted.
	Predicted int
}

// Paired returns the difference a − b of two evaluations, basket by basket.
// a and b must come from Evaluate, IndependentBaseline,
// Cooccurrence.Evaluate, CooccurrenceBaseline, LatentClass.Evaluate or
// LatentClassBaseline (or Compare) of the same test baskets under the same
// Options.Key; Paired refuses evaluations of other baskets.
func Paired(a, b *Metrics) (*Difference, error) {
	if a == nil || b == nil || a.per == nil || b.per == nil || a.per.pr == nil || b.per.pr == nil {
		return nil, errors.New("eval: Paired: an evaluation without per-basket values (not from Evaluate or a baseline's evaluation)")
	}
	pa, pb := a.per, b.per
	if pa.fp != pb.fp || len(pa.pr) != len(pb.pr) {
		return nil, errors.New("eval: Paired: the evaluations are of different test baskets")
	}
	d := &Difference{}
	d.TestLL, d.TestLLSE = meanDiff(pa.ll, pb.ll)
	d.TestLLEps, d.TestLLEpsSE = meanDiff(pa.llEps, pb.llEps)
	var diff []float64
	var bk []int
	for i, x := range pa.pr {
		if pa.predicted[i] && pb.predicted[i] {
			diff, bk = append(diff, x-pb.pr[i]), append(bk, int(pa.bin[i]))
		}
	}
	d.Predicted = len(diff)
	d.MPR, d.MPRSE = math.NaN(), math.NaN()
	if len(diff) > 0 {
		d.MPR, d.MPRSE = 100*bucketMean(diff, bk), 100*bucketStdErr(diff, bk)
	}
	return d, nil
}

// meanDiff returns the mean of x − y and its standard error (NaN, NaN
// when either is missing).
func meanDiff(x, y []float64) (float64, float64) {
	if x == nil || y == nil || len(x) != len(y) || len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	return mean(d), stdErr(d)
}

// fingerprint identifies a list of baskets (FNV-1a of the sizes and the
// items, in order).
func fingerprint(baskets [][]int) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v int) {
		u := uint64(v)
		for k := range buf {
			buf[k] = byte(u >> (8 * k))
		}
		h.Write(buf[:])
	}
	for _, s := range baskets {
		put(len(s))
		for _, it := range s {
			put(it)
		}
	}
	return h.Sum64()
}

// shifted returns x with c added to every value.
func shifted(x []float64, c float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v + c
	}
	return out
}
