package ndpp

import "fmt"

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
