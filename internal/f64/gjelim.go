package f64

// gjElimGo is gjElim's Go twin: for every row r ≠ c of the k×k a (row
// stride lda) with f = a[r][c] ≠ 0 (NaN included), it sets a[r][c] = 0
// and then adds −f·a[c][j] to a[r][j] for j < k, each product and sum
// rounded on its own (not fused).
func gjElimGo(a []float64, k, lda, c int) {
	rowc := a[c*lda : c*lda+k]
	for r := range k {
		if r == c {
			continue
		}
		rowr := a[r*lda : r*lda+k]
		f := rowr[c]
		if f == 0 {
			continue
		}
		rowr[c] = 0
		for j, x := range rowc {
			rowr[j] += float64(-f * x) // not fused
		}
	}
}
