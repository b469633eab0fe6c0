package jsonitem

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

func raws(s ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(s))
	for i, x := range s {
		out[i] = json.RawMessage(x)
	}
	return out
}

// TestRows: tokens as JSON strings and integers map to rows; what is not
// an item, an unknown item and a repeat (in short and long lists) are
// errors at their position.
func TestRows(t *testing.T) {
	toks := make([]string, 50)
	for i := range toks {
		toks[i] = fmt.Sprintf("t%d", i)
	}
	voc, err := ndpp.NewVocab(toks)
	require.NoError(t, err)
	base := ndpp.Random(50, 2, 1, ndpp.RandomOptions{})
	v, b, _, c := base.Rows()
	m, err := ndpp.NewFromRows(50, 2, v, b, c, ndpp.WithVocab(voc))
	require.NoError(t, err)
	rows, e := Rows(m, "f", raws(`"t3"`, `"t0"`), nil)
	require.Nil(t, e)
	require.Equal(t, []int{3, 0}, rows)
	plain := ndpp.Random(50, 2, 1, ndpp.RandomOptions{})
	rows, e = Rows(plain, "f", raws(`7`, `"8"`), make([]int, 5))
	require.Nil(t, e)
	require.Equal(t, []int{7, 8}, rows)

	for _, c := range []struct {
		items []json.RawMessage
		want  Error
	}{
		{raws(`"t1"`, `1.5`), Error{1, "1.5 is not an item (a JSON string or integer)"}},
		{raws(`null`), Error{0, "null is not an item (a JSON string or integer)"}},
		{raws(`["t1"]`), Error{0, `["t1"] is not an item (a JSON string or integer)`}},
		{raws(`"t1"`, `"nope"`), Error{1, `unknown item "nope"`}},
		{raws(`"t1"`, `"t2"`, `"t1"`), Error{2, `item "t1" repeats f[0]`}},
		{raws(`"` + strings.Repeat("é", 30) + `"`), Error{0, `unknown item "` + strings.Repeat("é", 18) + `..."`}},
	} {
		_, e := Rows(m, "f", c.items, nil)
		require.NotNil(t, e, "%s", c.items)
		require.Equal(t, c.want, *e)
	}
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprintf(`"t%d"`, i)
	}
	long = append(long, `"t5"`)
	_, e = Rows(m, "g", raws(long...), nil)
	require.Equal(t, Error{40, `item "t5" repeats g[5]`}, *e)
}

func TestTruncate(t *testing.T) {
	require.Equal(t, "short", Truncate("short"))
	s := strings.Repeat("x", 40)
	require.Equal(t, s, Truncate(s))
	require.Equal(t, strings.Repeat("x", 37)+"...", Truncate(s+"y"))
	got := Truncate(strings.Repeat("ab€", 20))
	require.LessOrEqual(t, len(got), 40)
	require.True(t, strings.HasSuffix(got, "..."))
	require.True(t, json.Valid([]byte(`"`+got+`"`)))
}
