package baskets

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

const transactionsFile = "../../testdata/transactions.csv"

func TestCSVTransactionsFixture(t *testing.T) {
	voc := &ndpp.Vocab{}
	r, err := OpenCSV(transactionsFile, CSVOptions{BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc, Grow: true})
	require.NoError(t, err)
	defer r.Close()
	got, lines := readAllLines(t, r)
	want := [][]int{{0, 1, 2, 3}, {4, 5}, {6, 7, 8, 9, 0}, {10, 11, 1}, {12}, {13, 14, 15, 16}, {17}, {5, 4}, {0, 1, 3, 18}, {19}, {20, 2}}
	require.Equal(t, want, got)
	require.Equal(t, []int{2, 6, 8, 14, 17, 18, 22, 23, 25, 29, 30}, lines)
	require.Equal(t, Stats{Baskets: 11, Items: 29, Duplicates: 1}, r.Stats())
	tokens := voc.Tokens()
	require.Len(t, tokens, 21)
	require.Equal(t, []string{"85123A", "POST", "D", "22961"}, []string{tokens[0], tokens[16], tokens[19], tokens[20]})
	// With the vocabulary now complete, a second pass without Grow gives
	// the same baskets; MaxSize drops the largest.
	r2, err := OpenCSV(transactionsFile, CSVOptions{BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc, N: 21, MaxSize: 4})
	require.NoError(t, err)
	defer r2.Close()
	got2, _ := readAllLines(t, r2)
	require.Equal(t, [][]int{{0, 1, 2, 3}, {4, 5}, {10, 11, 1}, {12}, {13, 14, 15, 16}, {17}, {5, 4}, {0, 1, 3, 18}, {19}, {20, 2}}, got2, "MaxSize 4")
	require.Equal(t, 1, r2.Stats().Skipped)
	// Gzip is transparent.
	gz := filepath.Join(t.TempDir(), "tx.csv.gz")
	writeGzip(t, gz, readTestFile(t, transactionsFile))
	r3, err := OpenCSV(gz, CSVOptions{BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc})
	require.NoError(t, err)
	defer r3.Close()
	got3, _ := readAllLines(t, r3)
	require.Equal(t, want, got3, "gzip")
}

func TestCSVFormats(t *testing.T) {
	cases := []struct {
		name, in string
		opt      CSVOptions
		want     [][]int
		lines    []int
		stats    Stats
	}{
		{"integer items without vocab", "basket,item\nb1,3\nb1,0\nb2,3\n",
			CSVOptions{BasketColumn: "basket", ItemColumn: "item"}, [][]int{{3, 0}, {3}}, []int{2, 4}, Stats{Baskets: 2, Items: 3}},
		{"BOM, spaces, CRLF, column order", "\ufeff item , id ,x\r\n\"7\",\" a \",q\r\n8,a,q\r\n7,b,\"multi\nline\"\r\n9,c,q",
			CSVOptions{BasketColumn: "id", ItemColumn: "item"}, [][]int{{7, 8}, {7}, {9}}, []int{2, 4, 6}, Stats{Baskets: 3, Items: 4}},
		{"semicolon", "id;item\n1;5\n1;6\n",
			CSVOptions{BasketColumn: "id", ItemColumn: "item", Comma: ';'}, [][]int{{5, 6}}, []int{2}, Stats{Baskets: 1, Items: 2}},
		{"empty fields skipped", "id,item\n1,5\n1,\n,6\n2,1\n",
			CSVOptions{BasketColumn: "id", ItemColumn: "item"}, [][]int{{5}, {1}}, []int{2, 5}, Stats{Baskets: 2, Items: 2, Empty: 2}},
		{"header only", "id,item\n",
			CSVOptions{BasketColumn: "id", ItemColumn: "item"}, [][]int{}, []int{}, Stats{}},
		{"last basket skipped", "id,item\n1,1\n2,1\n2,2\n2,3\n",
			CSVOptions{BasketColumn: "id", ItemColumn: "item", MaxSize: 2}, [][]int{{1}}, []int{2}, Stats{Baskets: 1, Items: 1, Skipped: 1}},
		{"middle basket skipped", "id,item\n1,1\n2,1\n2,2\n2,3\n3,4\n",
			CSVOptions{BasketColumn: "id", ItemColumn: "item", MaxSize: 2}, [][]int{{1}, {4}}, []int{2, 6}, Stats{Baskets: 2, Items: 2, Skipped: 1}},
	}
	for _, tc := range cases {
		r, err := NewCSVReader(strings.NewReader(tc.in), tc.opt)
		require.NoError(t, err, tc.name)
		got, lines := readAllLines(t, r)
		require.Equal(t, tc.want, got, tc.name)
		require.Equal(t, tc.lines, lines, tc.name)
		require.Equal(t, tc.stats, r.Stats(), tc.name)
		_, err = r.Next()
		require.Equal(t, io.EOF, err, "%s: Next after EOF", tc.name)
	}
}

func TestCSVErrors(t *testing.T) {
	voc, err := ndpp.NewVocab([]string{"A", "B"})
	require.NoError(t, err)
	std := CSVOptions{BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc}
	cases := []struct {
		name, in string
		opt      CSVOptions
		want     string
		atOpen   bool
	}{
		{"missing column", "Invoice,StockCode\n1,A\n", std, `baskets: input: no column "InvoiceNo" in the header ["Invoice" "StockCode"]`, true},
		{"duplicate column", "InvoiceNo,StockCode,StockCode\n", std, `column "StockCode" appears twice`, true},
		{"empty file", "", std, "empty file; want a header line", true},
		{"no columns named", "a,b\n", CSVOptions{ItemColumn: "b"}, "needs both BasketColumn and ItemColumn", true},
		{"same column", "a,b\n", CSVOptions{BasketColumn: "a", ItemColumn: "a"}, `BasketColumn and ItemColumn are both "a"`, true},
		{"bad comma", "a,b\n", CSVOptions{BasketColumn: "a", ItemColumn: "b", Comma: '"'}, "invalid CSV separator", true},
		{"bad header quote", "a,\"b\n", CSVOptions{BasketColumn: "a", ItemColumn: "b"}, "baskets: input:1: bad CSV: extraneous or missing \" in quoted-field", true},
		{"grow without vocab", "a,b\n", CSVOptions{BasketColumn: "a", ItemColumn: "b", Grow: true}, "Grow needs a Vocab", true},
		{"not contiguous", "InvoiceNo,StockCode\n1,A\n2,B\n1,B\n", std,
			`baskets: input:4: basket "1" re-appears after other baskets (its rows began at line 2); the rows of a basket must be contiguous`, false},
		{"unknown item", "InvoiceNo,StockCode\n1,A\n1,B\n2,A\n2,Z\n", std, `baskets: input:5: bad item token "Z": not in the vocabulary (2 tokens)`, false},
		{"unknown item at EOF", "InvoiceNo,StockCode\n1,A\n1,Q", std, `baskets: input:3: bad item token "Q": not in the vocabulary`, false},
		{"field count", "InvoiceNo,StockCode\n1,A\n1,B,extra\n", std, "baskets: input:3: bad CSV: wrong number of fields", false},
		{"bare quote", "InvoiceNo,StockCode\n1,A\n1,B\"x\n", std, "baskets: input:3: bad CSV: bare \" in non-quoted-field", false},
		{"non-integer without vocab", "id,item\n1,5\n1,85123A\n", CSVOptions{BasketColumn: "id", ItemColumn: "item"}, `baskets: input:3: bad item token "85123A": not an integer`, false},
		{"N bound", "id,item\n1,5\n", CSVOptions{BasketColumn: "id", ItemColumn: "item", N: 5}, `baskets: input:2: bad item token "5": row 5 out of range [0, 5)`, false},
	}
	for _, tc := range cases {
		r, err := NewCSVReader(strings.NewReader(tc.in), tc.opt)
		if tc.atOpen {
			require.ErrorContains(t, err, tc.want, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		_, err = readAll(r)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	// File errors name the file.
	dir := t.TempDir()
	p := filepath.Join(dir, "tx.csv")
	require.NoError(t, os.WriteFile(p, []byte("x,y\n"), 0o644))
	_, err = OpenCSV(p, std)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "baskets: "+p+": no column"), "%v does not name the file", err)
	_, err = OpenCSV(filepath.Join(dir, "missing.csv"), std)
	require.ErrorContains(t, err, "missing.csv")
}
