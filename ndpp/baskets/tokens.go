package baskets

import (
	"errors"
	"fmt"
)

// Tokens says which tokens a growing vocabulary (LineOptions.Grow,
// CSVOptions.Grow) takes as items. Without Grow the rule does not apply:
// tokens must then be rows (no vocabulary) or in the vocabulary.
type Tokens int

const (
	// AnyTokens takes every token as an item name (the zero value).
	AnyTokens Tokens = iota
	// IntTokens takes only non-negative decimal integers (item ids, any
	// number of digits, no sign): any other token — a header, a
	// missing-value marker such as "NaN" or "-", a stray word — is an
	// error wrapping ErrNotInteger that names the file, line and token.
	IntTokens
	// AutoTokens is IntTokens when the first basket's tokens are all
	// non-negative integers, AnyTokens otherwise. In the line format it
	// also reports a header: when the first line with tokens has no
	// integer token and the next one has integer tokens only, reading that
	// next line returns an error wrapping ErrHeader that names the first
	// (LineOptions.Header skips a header line).
	AutoTokens
)

// ErrNotInteger is wrapped by the error of a token that IntTokens, or
// AutoTokens over a file of integer ids, does not take as an item.
var ErrNotInteger = errors.New("not a non-negative integer item id")

// ErrHeader is wrapped by the error of a first line that AutoTokens takes
// for a header.
var ErrHeader = errors.New("the first line looks like a header")

// String returns the name of the rule: any, int or auto.
func (t Tokens) String() string {
	switch t {
	case AnyTokens:
		return "any"
	case IntTokens:
		return "int"
	case AutoTokens:
		return "auto"
	}
	return fmt.Sprintf("Tokens(%d)", int(t))
}

// isUint reports whether t is a non-empty run of decimal digits.
func isUint(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for _, c := range t {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// tokenState is the Tokens rule's state of a Reader.
type tokenState struct {
	rule    Tokens
	decided bool // AutoTokens: the first basket has been seen
	ints    bool // the tokens must be integers
	// firstLine is the line of the first basket when none of its tokens is
	// an integer (a possible header), or 0.
	firstLine int
	checked   bool // the header check has been made
}

// checkTokens applies the rule to the tokens of the basket at line (the
// line of each token for CSV, lines nil for the line format). It returns
// the index of a refused token and the error's text, or -1.
func (r *Reader) checkTokens(toks [][]byte, line int, lines []int) error {
	ts := &r.tokens
	if ts.rule == AnyTokens || r.vocab == nil || !r.grow {
		return nil
	}
	at := func(i int) int {
		if lines != nil {
			return lines[i]
		}
		return line
	}
	if !ts.decided {
		ts.decided = true
		all, none := true, true
		for _, t := range toks {
			if isUint(t) {
				none = false
			} else {
				all = false
			}
		}
		ts.ints = ts.rule == IntTokens || all
		if ts.rule == AutoTokens && none && lines == nil {
			ts.firstLine = line
		}
		if ts.rule == IntTokens {
			ts.checked = true
		}
	} else if ts.firstLine > 0 && !ts.checked {
		ts.checked = true
		all := true
		for _, t := range toks {
			all = all && isUint(t)
		}
		if all {
			return fmt.Errorf("baskets: %s:%d: %w: none of its tokens is an integer, while those of line %d all are", r.name, ts.firstLine, ErrHeader, line)
		}
	}
	if ts.ints {
		for i, t := range toks {
			if !isUint(t) {
				why := "the file's first basket has integer ids only"
				if ts.rule == IntTokens {
					why = "items are integer ids"
				}
				return fmt.Errorf("baskets: %s:%d: bad item token %q: %w (%s)", r.name, at(i), t, ErrNotInteger, why)
			}
		}
	}
	return nil
}
