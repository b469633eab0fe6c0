// Package jsonitem reads the items of JSON requests: a model's items named
// by their tokens (ndpp.Model.Row), as JSON strings or, for integer ids
// and rows, JSON integers. Package serve's endpoints and rerank's JSON wire
// form (rerank.JSONRequest) read items through it, so that both accept and
// refuse the same items with the same messages.
package jsonitem

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ndpp-go/ndpp/ndpp"
)

// Error is a bad entry of a list of items: its position and the reason.
type Error struct {
	Index int
	Msg   string
}

// Rows maps the JSON items of the list field to m's rows (Model.Row),
// appending them to dst[:0]: JSON strings are tokens, JSON integers their
// decimal text. An entry that is not an item, an unknown item and a repeat
// are an Error (the message of a repeat names field[j], the entry it
// repeats).
func Rows(m *ndpp.Model, field string, items []json.RawMessage, dst []int) ([]int, *Error) {
	dst = dst[:0]
	var seen map[int]int
	if len(items) > 32 {
		seen = make(map[int]int, len(items))
	}
	for i, raw := range items {
		tok, ok := Text(raw)
		if !ok {
			return nil, &Error{i, fmt.Sprintf("%s is not an item (a JSON string or integer)", Truncate(string(raw)))}
		}
		row, known := m.Row(tok)
		if !known {
			return nil, &Error{i, fmt.Sprintf("unknown item %q", Truncate(tok))}
		}
		if seen != nil {
			if j, dup := seen[row]; dup {
				return nil, &Error{i, fmt.Sprintf("item %q repeats %s[%d]", tok, field, j)}
			}
			seen[row] = i
		} else {
			for j, r := range dst {
				if r == row {
					return nil, &Error{i, fmt.Sprintf("item %q repeats %s[%d]", tok, field, j)}
				}
			}
		}
		dst = append(dst, row)
	}
	return dst, nil
}

// Text returns the token of a JSON string or integer (false for any other
// JSON value).
func Text(raw json.RawMessage) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	s := string(raw)
	if s == "" || strings.ContainsAny(s, ".eE") || s == "null" || s == "true" || s == "false" || s[0] == '[' || s[0] == '{' {
		return "", false
	}
	return s, true
}

// Truncate shortens a value echoed in an error to at most 40 bytes (cut
// at a character boundary, "..." added).
func Truncate(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 37
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
