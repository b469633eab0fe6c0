package baskets

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndpp-go/ndpp/ndpp"
)

var intToken = regexp.MustCompile(`^[+-]?[0-9]+$`)

type refResult struct {
	baskets [][]int
	lines   []int
	errLine int // 0: no error
	stats   Stats
}

// refLineParse is a deliberately simple, independent reading of the line
// format used to check Reader on arbitrary input.
func refLineParse(data []byte, base, n, maxSize int) refResult {
	var res refResult
	lines := strings.Split(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > 0 {
		lines[0] = strings.TrimPrefix(lines[0], "\ufeff")
	}
	for i, line := range lines {
		toks := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\r' })
		if len(toks) == 0 {
			res.stats.Empty++
			continue
		}
		var rows []int
		for _, tok := range toks {
			if !intToken.MatchString(tok) {
				res.errLine = i + 1
				return res
			}
			v, err := strconv.ParseInt(tok, 10, 64)
			if err != nil || v > maxRowToken || v < -maxRowToken {
				res.errLine = i + 1
				return res
			}
			row := int(v) - base
			if row < 0 || (n > 0 && row >= n) {
				res.errLine = i + 1
				return res
			}
			rows = append(rows, row)
		}
		uniq := refDedup(rows)
		res.stats.Duplicates += len(rows) - len(uniq)
		if maxSize > 0 && len(uniq) > maxSize {
			res.stats.Skipped++
			continue
		}
		res.baskets = append(res.baskets, uniq)
		res.lines = append(res.lines, i+1)
		res.stats.Baskets++
		res.stats.Items += len(uniq)
	}
	return res
}

func checkBasket(t *testing.T, b []int, n int) {
	t.Helper()
	require.NotEmpty(t, b, "empty basket returned")
	seen := map[int]bool{}
	for _, x := range b {
		require.False(t, x < 0 || (n > 0 && x >= n) || seen[x], "basket %v: item %d out of range [0, %d) or repeated", b, x, n)
		seen[x] = true
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("1 2 3\n4,5\t6\r\n\n7 7 8\n"), true, uint8(0), uint8(0))
	f.Add([]byte("0 1\r\n2 x\n"), false, uint8(3), uint8(2))
	f.Add([]byte("-1 +2 007\n99999999999999999999\n"), false, uint8(0), uint8(0))
	f.Add([]byte(" ,\t\r\n,,1,,\n"), true, uint8(200), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, base1 bool, n, maxSize uint8) {
		base := 0
		if base1 {
			base = 1
		}
		opt := LineOptions{Base: base, N: int(n), MaxSize: int(maxSize)}
		r := NewLineReader(bytes.NewReader(data), opt)
		var got [][]int
		var lines []int
		var err error
		for {
			var b []int
			b, err = r.Next()
			if err != nil {
				break
			}
			checkBasket(t, b, int(n))
			require.False(t, maxSize > 0 && len(b) > int(maxSize), "basket of %d items with MaxSize %d", len(b), maxSize)
			got = append(got, b)
			lines = append(lines, r.Line())
		}
		ref := refLineParse(data, base, int(n), int(maxSize))
		require.Equal(t, ref.baskets, got, "baskets against the reference")
		require.Equal(t, ref.lines, lines, "lines against the reference")
		if ref.errLine == 0 {
			require.Equal(t, io.EOF, err, "the reference reads the input")
			require.Equal(t, ref.stats, r.Stats())
			return
		}
		prefix := fmt.Sprintf("baskets: input:%d: bad item token ", ref.errLine)
		require.NotEqual(t, io.EOF, err, "the reference fails at line %d", ref.errLine)
		require.True(t, strings.HasPrefix(err.Error(), prefix), "error %v; want one starting %q", err, prefix)
	})
}

// refCSVParse groups the records of a transaction CSV read whole by
// encoding/csv, numbering item tokens in order of first appearance in the
// kept baskets. ok is false when the input must be rejected.
func refCSVParse(data []byte, maxSize int) (baskets [][]int, ok bool) {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, false
	}
	bcol, icol := -1, -1
	for i, h := range recs[0] {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		switch strings.TrimSpace(h) {
		case "b":
			if bcol >= 0 {
				return nil, false
			}
			bcol = i
		case "i":
			if icol >= 0 {
				return nil, false
			}
			icol = i
		}
	}
	if bcol < 0 || icol < 0 {
		return nil, false
	}
	type group struct {
		id    string
		items []string
	}
	var groups []group
	done := map[string]bool{}
	for _, rec := range recs[1:] {
		id, item := strings.TrimSpace(rec[bcol]), strings.TrimSpace(rec[icol])
		if id == "" || item == "" {
			continue
		}
		if len(groups) > 0 && groups[len(groups)-1].id == id {
			groups[len(groups)-1].items = append(groups[len(groups)-1].items, item)
			continue
		}
		if done[id] {
			return nil, false
		}
		done[id] = true
		groups = append(groups, group{id, []string{item}})
	}
	rows := map[string]int{}
	for _, g := range groups {
		var uniq []string
		seen := map[string]bool{}
		for _, it := range g.items {
			if !seen[it] {
				seen[it] = true
				uniq = append(uniq, it)
			}
		}
		if maxSize > 0 && len(uniq) > maxSize {
			continue
		}
		var b []int
		for _, it := range uniq {
			if _, ok := rows[it]; !ok {
				rows[it] = len(rows)
			}
			b = append(b, rows[it])
		}
		baskets = append(baskets, b)
	}
	return baskets, true
}

func FuzzCSVReader(f *testing.F) {
	f.Add([]byte("b,i\n1,x\n1,y\n2,x\n"), uint8(0))
	f.Add([]byte("\ufeffi,b,c\r\n\"a,b\",7,\"q\nq\"\r\n c ,7,\r\n"), uint8(1))
	f.Add([]byte("b,i\n1,x\n2,y\n1,z\n"), uint8(0))
	f.Add([]byte("b,i\n1,x,extra\n"), uint8(0))
	f.Add([]byte("b,i\n,x\n1,\n1,\"x\"\"y\"\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, maxSize uint8) {
		voc := &ndpp.Vocab{}
		var got [][]int
		var err error
		r, err := NewCSVReader(bytes.NewReader(data), CSVOptions{BasketColumn: "b", ItemColumn: "i", Vocab: voc, Grow: true, MaxSize: int(maxSize)})
		if err == nil {
			for {
				var b []int
				b, err = r.Next()
				if err != nil {
					break
				}
				checkBasket(t, b, voc.Len())
				require.False(t, maxSize > 0 && len(b) > int(maxSize), "basket of %d items with MaxSize %d", len(b), maxSize)
				got = append(got, b)
			}
		}
		ref, ok := refCSVParse(data, int(maxSize))
		if !ok {
			require.NotEqual(t, io.EOF, err, "read %v; the reference rejects the input", got)
			require.True(t, strings.HasPrefix(err.Error(), "baskets: input"), "error without the input name: %v", err)
			return
		}
		require.Equal(t, io.EOF, err, "the reference reads the input as %v", ref)
		require.Equal(t, ref, got, "baskets against the reference")
	})
}

// readTokens reads every basket with a growing vocabulary and returns the
// baskets as tokens, and the first error other than io.EOF.
func readTokens(data []byte, opt LineOptions) ([][]string, error) {
	voc, _ := ndpp.NewVocab(nil)
	opt.Vocab, opt.Grow = voc, true
	r := NewLineReader(bytes.NewReader(data), opt)
	out := [][]string{}
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		toks := make([]string, len(b))
		for i, row := range b {
			toks[i] = voc.Token(row)
		}
		out = append(out, toks)
	}
}

// FuzzTokenRules checks the token rules of a growing vocabulary against
// AnyTokens: IntTokens reads the same baskets up to its first refusal, and
// refuses exactly when a basket holds a token that is not a non-negative
// integer (AutoTokens: when the first basket's tokens all are); Header
// reads the baskets of the input without its first line with tokens.
func FuzzTokenRules(f *testing.F) {
	f.Add([]byte("1 2 3\n4,5\t6\r\n\n7 7 8\n"))
	f.Add([]byte("a b\n1 2\n"))
	f.Add([]byte("1 2\n3 NaN\n"))
	f.Add([]byte("\ufeffx\n\n 1 -2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		all, err := readTokens(data, LineOptions{})
		if err != nil {
			return // a line too long or another reading error, the same for every rule
		}
		firstBad := -1
		for i, b := range all {
			for _, tok := range b {
				if !isUint([]byte(tok)) && firstBad < 0 {
					firstBad = i
				}
			}
		}
		ints, err := readTokens(data, LineOptions{Tokens: IntTokens})
		if firstBad < 0 {
			require.NoError(t, err)
			require.Equal(t, all, ints)
		} else {
			require.ErrorIs(t, err, ErrNotInteger)
			require.Equal(t, all[:firstBad], ints)
		}
		auto, err := readTokens(data, LineOptions{Tokens: AutoTokens})
		switch {
		case firstBad > 0 || (firstBad < 0 && len(all) > 0):
			// The first basket is all integers: AutoTokens is IntTokens.
			if firstBad < 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrNotInteger)
			}
			require.Equal(t, ints, auto)
		case firstBad == 0 && errors.Is(err, ErrHeader):
			require.Len(t, auto, 1, "the header is reported when the second basket is read")
		default:
			require.NoError(t, err)
			require.Equal(t, all, auto)
		}
		if len(all) > 0 {
			hdr, err := readTokens(data, LineOptions{Header: true})
			require.NoError(t, err)
			require.Equal(t, all[1:], hdr)
		}
	})
}
