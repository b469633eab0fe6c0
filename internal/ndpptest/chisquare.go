package ndpptest

import "gonum.org/v1/gonum/stat/distuv"

// ChiSquare returns Pearson's statistic of the counts of total draws
// against the probabilities of their cells, its degrees of freedom and its
// p-value; cells with an expected count below 5 are pooled into one. The
// samplers' exactness tests compare it with a small p-value.
func ChiSquare(counts []int, probs []float64, total int) (stat float64, df int, p float64) {
	var poolObs, poolExp float64
	cells := 0
	for i, pr := range probs {
		e := pr * float64(total)
		if e < 5 {
			poolObs += float64(counts[i])
			poolExp += e
			continue
		}
		d := float64(counts[i]) - e
		stat += d * d / e
		cells++
	}
	if poolExp > 0 {
		d := poolObs - poolExp
		stat += d * d / poolExp
		cells++
	}
	df = cells - 1
	return stat, df, distuv.ChiSquared{K: float64(df)}.Survival(stat)
}
