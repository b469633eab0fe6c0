package ndpptest

import (
	"math"
	"testing"
)

// TestChiSquare: counts equal to their expectations give a zero statistic
// and p-value 1; the statistic of a known case matches the formula, with
// the small cells pooled.
func TestChiSquare(t *testing.T) {
	stat, df, p := ChiSquare([]int{50, 30, 20}, []float64{0.5, 0.3, 0.2}, 100)
	if stat != 0 || df != 2 || p != 1 {
		t.Fatalf("exact counts: stat %v, df %d, p %v", stat, df, p)
	}
	// Cells 0 and 1 expect 60 and 36; 2 and 3 (2 and 2) are pooled: 4.
	stat, df, p = ChiSquare([]int{50, 40, 6, 4}, []float64{0.6, 0.36, 0.02, 0.02}, 100)
	want := 100.0/60 + 16.0/36 + 36.0/4
	if math.Abs(stat-want) > 1e-12 || df != 2 || !(p > 0 && p < 0.01) {
		t.Fatalf("stat %v (want %v), df %d, p %v", stat, want, df, p)
	}
}
