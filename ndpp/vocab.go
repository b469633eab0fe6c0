package ndpp

import (
	"fmt"
	"strconv"
)

// Vocab maps item tokens (as they appear in data files) to dense row indices
// 0..Len()-1, in order of first appearance.
type Vocab struct {
	tokens []string
	index  map[string]int
}

// NewVocab returns a vocabulary over the given distinct tokens, in order.
func NewVocab(tokens []string) (*Vocab, error) {
	v := &Vocab{index: make(map[string]int, len(tokens))}
	for _, t := range tokens {
		if _, ok := v.index[t]; ok {
			return nil, fmt.Errorf("ndpp: duplicate vocabulary token %q", t)
		}
		v.Add(t)
	}
	return v, nil
}

// Len returns the number of tokens.
func (v *Vocab) Len() int { return len(v.tokens) }

// Add returns the row of token t, adding it if new.
func (v *Vocab) Add(t string) int {
	if v.index == nil {
		v.index = make(map[string]int)
	}
	if i, ok := v.index[t]; ok {
		return i
	}
	v.index[t] = len(v.tokens)
	v.tokens = append(v.tokens, t)
	return len(v.tokens) - 1
}

// Lookup returns the row of token t.
func (v *Vocab) Lookup(t string) (int, bool) {
	i, ok := v.index[t]
	return i, ok
}

// Token returns the token of row i. It panics, naming the row, when i is
// not in [0, Len()).
func (v *Vocab) Token(i int) string {
	if uint(i) >= uint(len(v.tokens)) {
		panic(fmt.Sprintf("ndpp: Vocab.Token: row %d out of range [0, %d)", i, len(v.tokens)))
	}
	return v.tokens[i]
}

// Tokens returns a copy of the tokens in row order.
func (v *Vocab) Tokens() []string { return append([]string(nil), v.tokens...) }

// Clone returns an independent copy.
func (v *Vocab) Clone() *Vocab {
	c, _ := NewVocab(v.tokens)
	return c
}

// IDs returns the tokens as integer ids when every token is the canonical
// decimal text of an int64 (as strconv.FormatInt writes it: no '+', no
// leading zeros), so that a model over these tokens can record ids
// (WithIDs) and map the same tokens to the same rows (Model.Row); else
// nil, false.
func (v *Vocab) IDs() ([]int64, bool) {
	ids := make([]int64, len(v.tokens))
	for i, t := range v.tokens {
		id, err := strconv.ParseInt(t, 10, 64)
		if err != nil || strconv.FormatInt(id, 10) != t {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}
