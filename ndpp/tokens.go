package ndpp

import "strconv"

// How a model's items are named, in precedence order: a vocabulary of
// string tokens (WithVocab) names them by its tokens; else integer ids
// (WithIDs) name them by the ids, written in decimal in data files; else
// the rows 0…n−1 name themselves. Token, Row, ID, RowOfID and IntItems
// apply that one rule, for readers of data (TokenVocab) and servers alike.

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

// IntItems reports whether the model's items are named by integers (its
// ids, or its rows when it has neither ids nor a vocabulary), so that a
// writer of JSON gives them as numbers; false when a vocabulary names them
// by strings.
func (m *Model) IntItems() bool { return m.vocab == nil }

// Row returns the row of the item that token names: a vocabulary token,
// else the canonical decimal text of an id (as Token writes it: no sign
// for ids ≥ 0, no leading zeros), else of a row in [0, N()). ok is false
// for a token that names no item.
func (m *Model) Row(token string) (row int, ok bool) {
	if m.vocab != nil {
		return m.vocab.Lookup(token)
	}
	id, err := strconv.ParseInt(token, 10, 64)
	if err != nil || strconv.FormatInt(id, 10) != token {
		return -1, false
	}
	return m.RowOfID(id)
}

// RowOfID returns the row of the item named by the integer id: an id of
// WithIDs, or a row in [0, N()) for a model without ids or vocabulary, or
// a vocabulary token that is id's decimal text. ok is false when no item
// has that name.
func (m *Model) RowOfID(id int64) (row int, ok bool) {
	switch {
	case m.vocab != nil:
		return m.vocab.Lookup(strconv.FormatInt(id, 10))
	case m.ids != nil:
		row, ok = m.idRow[id]
		if !ok {
			return -1, false
		}
		return row, true
	case id >= 0 && id < int64(m.n):
		return int(id), true
	}
	return -1, false
}

// ID returns the integer name of row i: its id, or i itself for a model
// without ids or vocabulary. ok is false for a model whose vocabulary
// names items by strings (Token gives the name). It panics, naming the
// row, when i is not in [0, N()).
func (m *Model) ID(i int) (id int64, ok bool) {
	if uint(i) >= uint(m.n) {
		panic(itemRangeError{"ID", i, m.n})
	}
	switch {
	case m.vocab != nil:
		return 0, false
	case m.ids != nil:
		return m.ids[i], true
	}
	return int64(i), true
}
