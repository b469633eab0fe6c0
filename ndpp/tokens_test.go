package ndpp

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestItemNames: Row, RowOfID, ID, Token and IntItems agree with each
// other and with TokenVocab for a model named by ids, by a vocabulary and
// by neither (rows).
func TestItemNames(t *testing.T) {
	base := Random(5, 2, 1, RandomOptions{})
	v, b, _, c := base.Rows()
	ids := []int64{42, 7, 1000, 0, 3}
	withIDs, err := NewFromRows(5, 2, v, b, c, WithIDs(ids))
	require.NoError(t, err)
	voc, err := NewVocab([]string{"a", "b", "17", "d", "e"})
	require.NoError(t, err)
	withVocab, err := NewFromRows(5, 2, v, b, c, WithVocab(voc))
	require.NoError(t, err)

	for name, m := range map[string]*Model{"ids": withIDs, "vocab": withVocab, "rows": base} {
		tv := m.TokenVocab()
		for i := 0; i < m.N(); i++ {
			tok := m.Token(i)
			row, ok := m.Row(tok)
			require.True(t, ok, "%s: Row(%q)", name, tok)
			require.Equal(t, i, row, name)
			if tv != nil {
				r, ok := tv.Lookup(tok)
				require.True(t, ok)
				require.Equal(t, i, r, "%s: TokenVocab and Row disagree", name)
			}
			id, ok := m.ID(i)
			require.Equal(t, m.IntItems(), ok, name)
			if ok {
				require.Equal(t, strconv.FormatInt(id, 10), tok)
				r, ok := m.RowOfID(id)
				require.True(t, ok)
				require.Equal(t, i, r)
			}
		}
		for _, bad := range []string{"", "x", "-1", "+3", "03", "99999999999999999999", "5"} {
			_, ok := m.Row(bad)
			require.False(t, ok, "%s: Row(%q)", name, bad)
		}
	}
	require.True(t, withIDs.IntItems())
	require.True(t, base.IntItems())
	require.False(t, withVocab.IntItems())
	_, ok := withIDs.RowOfID(5)
	require.False(t, ok)
	_, ok = withIDs.Row("3") // id 3 is row 4; row 3's id is 0
	require.True(t, ok)
	r, _ := withIDs.Row("3")
	require.Equal(t, 4, r)
	r, ok = withVocab.RowOfID(17) // the token "17"
	require.True(t, ok)
	require.Equal(t, 2, r)
	_, ok = base.RowOfID(-1)
	require.False(t, ok)
	require.Panics(t, func() { base.ID(5) })
}

// TestVocabIDs: a vocabulary of canonical decimal integers converts to ids
// that name the same rows; any other token keeps it a vocabulary.
func TestVocabIDs(t *testing.T) {
	v, err := NewVocab([]string{"3", "17", "0", "9223372036854775807", "-4"})
	require.NoError(t, err)
	ids, ok := v.IDs()
	require.True(t, ok)
	require.Equal(t, []int64{3, 17, 0, 9223372036854775807, -4}, ids)
	for _, toks := range [][]string{{"1", "a"}, {"1", "007"}, {"+1"}, {"9223372036854775808"}, {"1.0"}} {
		v, err := NewVocab(toks)
		require.NoError(t, err)
		_, ok := v.IDs()
		require.False(t, ok, "%q", toks)
	}
}
