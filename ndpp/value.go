package ndpp

import "math"

// Value is the value of a set S in log space: Log = log det L_S when Zero
// is false. Zero reports det L_S = 0 under the numerical zero rule (see
// ZeroRcondFactor; Log is then −Inf). Values are never raw determinants.
type Value struct {
	Log  float64
	Zero bool
}

// ZeroValue is the value of a set whose determinant is zero.
var ZeroValue = Value{Log: math.Inf(-1), Zero: true}

// Greater reports whether v > w (a zero value is below every non-zero one).
func (v Value) Greater(w Value) bool {
	if v.Zero {
		return false
	}
	return w.Zero || v.Log > w.Log
}
