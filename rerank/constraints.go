package rerank

import "slices"

// Constraint limits how often items with the same value of an attribute
// appear in the list: the sequence is the shown items (oldest first)
// followed by the chosen ones, so shown items count toward the first
// positions' windows and runs. Give either Window and MaxPerWindow (at
// most MaxPerWindow items with the same value in any Window consecutive
// positions) or MaxRun (at most MaxRun consecutive items with the same
// value). Items without a value of the attribute (shown items when
// Request.ShownAttributes does not give it) match no other item.
type Constraint struct {
	Attribute    string `json:"attribute"`
	Window       int    `json:"window,omitempty"`
	MaxPerWindow int    `json:"max_per_window,omitempty"`
	MaxRun       int    `json:"max_run,omitempty"`
}

// Values of Result.Short.
const (
	// ShortZeroGain: no remaining candidate had a positive gain.
	ShortZeroGain = "zero_gain"
	// ShortConstraints: candidates with a positive gain remained, but
	// none could be placed at the next position without breaking a
	// constraint.
	ShortConstraints = "constraints"
)

// cons is the state of one constraint during a request.
type cons struct {
	window, limit, run int
	code               []int32 // value code per candidate position (−1: none)
	seq                []int32 // value codes of the sequence so far
	counts             []int32 // per code: occurrences in the last window−1 of seq
	nShown             int     // len(seq) after the shown items
	shownCounts        []int32 // counts after the shown items
}

// feasible reports whether the candidate at position p may come next.
func (c *cons) feasible(p int) bool {
	v := c.code[p]
	if v < 0 {
		return true
	}
	if c.run > 0 {
		n := 0
		for i := len(c.seq) - 1; i >= 0 && c.seq[i] == v; i-- {
			n++
		}
		return n+1 <= c.run
	}
	return int(c.counts[v])+1 <= c.limit
}

// push appends a value code to the sequence.
func (c *cons) push(v int32) {
	c.seq = append(c.seq, v)
	if c.run > 0 {
		return
	}
	if v >= 0 {
		c.counts[v]++
	}
	// Keep the counts over the last window−1 items.
	if i := len(c.seq) - c.window; i >= 0 && c.seq[i] >= 0 {
		c.counts[c.seq[i]]--
	}
}

// setupConstraints validates the request's constraints and builds their
// state in w.cons (nil without constraints), with the shown items pushed.
func (w *Workspace) setupConstraints(req *Request) error {
	w.cons = w.cons[:0]
	if len(req.Constraints) == 0 {
		if req.Attributes != nil || req.ShownAttributes != nil {
			return reqErr("constraints", -1, "attributes given without constraints")
		}
		return nil
	}
	nc := len(req.Candidates)
	for name, vals := range req.Attributes {
		if len(vals) != nc {
			return reqErr("attributes", -1, "%q has %d values for %d candidates", name, len(vals), nc)
		}
	}
	for name, vals := range req.ShownAttributes {
		if len(vals) != len(req.Shown) {
			return reqErr("shown_attributes", -1, "%q has %d values for %d shown items", name, len(vals), len(req.Shown))
		}
		if _, ok := req.Attributes[name]; !ok {
			return reqErr("shown_attributes", -1, "%q is not a candidate attribute", name)
		}
	}
	for i, ct := range req.Constraints {
		vals, ok := req.Attributes[ct.Attribute]
		if !ok {
			return reqErr("constraints", i, "attribute %q not in attributes", ct.Attribute)
		}
		// The state's buffers are the workspace's, reused request after
		// request.
		if len(w.cons) < cap(w.cons) {
			w.cons = w.cons[:len(w.cons)+1]
		} else {
			w.cons = append(w.cons, cons{})
		}
		c := &w.cons[len(w.cons)-1]
		c.window, c.limit, c.run = 0, 0, 0
		switch {
		case ct.MaxRun > 0 && ct.Window == 0 && ct.MaxPerWindow == 0:
			c.run = ct.MaxRun
		case ct.MaxRun == 0 && ct.Window > 0 && ct.MaxPerWindow > 0:
			c.window, c.limit = ct.Window, ct.MaxPerWindow
		default:
			w.cons = w.cons[:len(w.cons)-1]
			return reqErr("constraints", i, "%+v; want window ≥ 1 with max_per_window ≥ 1, or max_run ≥ 1", ct)
		}
		if w.codes == nil {
			w.codes = map[string]int32{}
		}
		codes := w.codes
		clear(codes)
		c.code = grow(c.code, nc)
		for p, v := range vals {
			code, ok := codes[v]
			if !ok {
				code = int32(len(codes))
				codes[v] = code
			}
			c.code[p] = code
		}
		c.counts = grow(c.counts, len(codes))
		clear(c.counts)
		c.seq = slices.Grow(c.seq[:0], len(req.Shown)+req.K)
		shown := req.ShownAttributes[ct.Attribute]
		for s := range req.Shown {
			v := int32(-1)
			if shown != nil {
				if code, ok := codes[shown[s]]; ok {
					v = code
				}
			}
			c.push(v)
		}
		c.nShown = len(c.seq)
		c.shownCounts = append(c.shownCounts[:0], c.counts...)
	}
	return nil
}

// feasible reports whether candidate position p may come next under every
// constraint.
func (w *Workspace) feasible(p int) bool {
	for i := range w.cons {
		if !w.cons[i].feasible(p) {
			return false
		}
	}
	return true
}

// resetConstraints takes the constraints back to the state after the
// shown items.
func (w *Workspace) resetConstraints() {
	for i := range w.cons {
		c := &w.cons[i]
		c.seq = c.seq[:c.nShown]
		copy(c.counts, c.shownCounts)
	}
}

// place records that candidate position p comes next.
func (w *Workspace) place(p int) {
	for i := range w.cons {
		w.cons[i].push(w.cons[i].code[p])
	}
}
