package baskets

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

func TestHeaderAndJunkTokensDoNotBecomeItems(t *testing.T) {
	t.Run("int rule refuses a junk token", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("3 5\n7 NaN\n"), LineOptions{Vocab: voc, Grow: true, Tokens: IntTokens})
		_, err := readAll(r)
		require.ErrorIs(t, err, ErrNotInteger)
		require.Contains(t, err.Error(), ":2:")
		require.Contains(t, err.Error(), `"NaN"`)
		for i := 0; i < voc.Len(); i++ {
			require.NotEqual(t, "NaN", voc.Token(i))
		}
	})
	t.Run("auto rule reports a header line", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("item_a item_b\n1 2\n2 3\n"), LineOptions{Vocab: voc, Grow: true, Tokens: AutoTokens})
		_, err := readAll(r)
		require.ErrorIs(t, err, ErrHeader)
		require.Contains(t, err.Error(), ":1:")
	})
	t.Run("header option skips the header", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("\nitem_a item_b\n1 2\n2 3\n"), LineOptions{Vocab: voc, Grow: true, Tokens: AutoTokens, Header: true})
		got, err := readAll(r)
		require.NoError(t, err)
		require.Equal(t, [][]int{{0, 1}, {1, 2}}, got)
		require.Equal(t, 3, voc.Len())
		require.Equal(t, "1", voc.Token(0))
	})
	t.Run("auto rule after integer baskets refuses words", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("1 2\n3 -\n"), LineOptions{Vocab: voc, Grow: true, Tokens: AutoTokens})
		got, err := readAll(r)
		require.ErrorIs(t, err, ErrNotInteger)
		require.Equal(t, [][]int{{0, 1}}, got)
	})
	t.Run("auto rule over names takes names", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("shirt shoe\nhat 12\n"), LineOptions{Vocab: voc, Grow: true, Tokens: AutoTokens})
		got, err := readAll(r)
		require.NoError(t, err)
		require.Equal(t, [][]int{{0, 1}, {2, 3}}, got)
	})
	t.Run("any rule keeps the old behaviour", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("a b\n1 2\n"), LineOptions{Vocab: voc, Grow: true})
		got, err := readAll(r)
		require.NoError(t, err)
		require.Equal(t, [][]int{{0, 1}, {2, 3}}, got)
	})
	t.Run("csv int rule", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r, err := NewCSVReader(strings.NewReader("b,i\n1,10\n1,11\n2,x\n"), CSVOptions{BasketColumn: "b", ItemColumn: "i", Vocab: voc, Grow: true, Tokens: AutoTokens})
		require.NoError(t, err)
		got, err := readAll(r)
		require.ErrorIs(t, err, ErrNotInteger)
		require.Contains(t, err.Error(), ":4:")
		require.Equal(t, [][]int{{0, 1}}, got)
	})
	t.Run("bad rule", func(t *testing.T) {
		voc, _ := ndpp.NewVocab(nil)
		r := NewLineReader(strings.NewReader("1\n"), LineOptions{Vocab: voc, Grow: true, Tokens: Tokens(9)})
		_, err := readAll(r)
		require.Error(t, err)
		require.True(t, !errors.Is(err, ErrNotInteger))
		require.Equal(t, "Tokens(9)", Tokens(9).String())
		require.Equal(t, "auto", AutoTokens.String())
	})
	t.Run("nil reader panics with the package name", func(t *testing.T) {
		require.PanicsWithValue(t, "baskets: NewLineReader with a nil io.Reader", func() { NewLineReader(nil, LineOptions{}) })
		require.PanicsWithValue(t, "baskets: NewCSVReader with a nil io.Reader", func() { _, _ = NewCSVReader(nil, CSVOptions{}) })
	})
}
