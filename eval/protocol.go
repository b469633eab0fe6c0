package eval

import (
	"strconv"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Keys returns the paper protocol's item ids of voc's rows (Options.Key):
// each row's token as an integer when every token is one, else nil (the
// row index is then the id).
func Keys(voc *ndpp.Vocab) []int64 {
	if voc == nil {
		return nil
	}
	keys := make([]int64, voc.Len())
	for i := range keys {
		k, err := strconv.ParseInt(voc.Token(i), 10, 64)
		if err != nil {
			return nil
		}
		keys[i] = k
	}
	return keys
}

// HeldOut returns the position in s of the item the paper protocol holds
// out: the one with the highest id under keys (Options.Key; nil: the
// row), the first of them on a tie. It returns -1 when s is empty or
// holds an item that is negative or, with keys, has no key.
func HeldOut(s []int, keys []int64) int {
	for _, i := range s {
		if i < 0 || keys != nil && i >= len(keys) {
			return -1
		}
	}
	if len(s) == 0 {
		return -1
	}
	key := sortKey(keys)
	t, kt := 0, key(s[0])
	for q := 1; q < len(s); q++ {
		if kq := key(s[q]); kq > kt {
			t, kt = q, kq
		}
	}
	return t
}

// LastSource passes the baskets of a stream on with the item the paper
// protocol holds out moved last (HeldOut; the others keep their order),
// for a stream whose vocabulary grows as it is read: the ids are the
// tokens of voc as integers while every token read so far is one, else
// the rows (the order of first appearance), as Keys gives them once the
// whole file is read. It reads voc on the goroutine that calls Next,
// which must be the one that fills it.
type LastSource struct {
	src     baskets.Source
	voc     *ndpp.Vocab
	keys    []int64 // the integer ids of voc's first len(keys) rows
	numeric bool    // every token checked so far is an integer
}

// NewLastSource returns a LastSource over src with the tokens of voc (nil:
// the rows are the ids).
func NewLastSource(src baskets.Source, voc *ndpp.Vocab) *LastSource {
	return &LastSource{src: src, voc: voc, numeric: voc != nil}
}

// Next returns src's next basket with its held-out item last (the
// basket's slice, rearranged in place).
func (l *LastSource) Next() ([]int, error) {
	b, err := l.src.Next()
	if err != nil || len(b) < 2 {
		return b, err
	}
	for l.numeric && len(l.keys) < l.voc.Len() {
		k, err := strconv.ParseInt(l.voc.Token(len(l.keys)), 10, 64)
		l.numeric = err == nil
		l.keys = append(l.keys, k)
	}
	var keys []int64
	if l.numeric {
		keys = l.keys
	}
	t := HeldOut(b, keys)
	if t < 0 {
		return b, nil // an item the vocabulary does not hold: the reader's to refuse
	}
	x := b[t]
	copy(b[t:], b[t+1:])
	b[len(b)-1] = x
	return b, nil
}
