package ndpp

import "strconv"

// TokenVocab returns the vocabulary that maps tokens in data files to the
// model's rows: the model's Vocab when it has one, else a vocabulary of its
// integer ids written in decimal, else nil (tokens are then 0-based row
// indices). It builds a new Vocab on each call when derived from ids.
func (m *Model) TokenVocab() *Vocab {
	if m.vocab != nil {
		return m.vocab
	}
	if m.ids == nil {
		return nil
	}
	toks := make([]string, len(m.ids))
	for i, id := range m.ids {
		toks[i] = strconv.FormatInt(id, 10)
	}
	v, err := NewVocab(toks)
	if err != nil {
		panic("ndpp: model ids are not distinct: " + err.Error()) // checked by WithIDs
	}
	return v
}

// Token returns the external name of row i: its vocabulary token, else its
// id, else the decimal row index. It panics, naming the row, when i is not
// in [0, N()).
func (m *Model) Token(i int) string {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"Token", i, m.n})
	}
	switch {
	case m.vocab != nil:
		return m.vocab.Token(i)
	case m.ids != nil:
		return strconv.FormatInt(m.ids[i], 10)
	}
	return strconv.Itoa(i)
}
