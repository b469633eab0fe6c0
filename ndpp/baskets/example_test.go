package baskets_test

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

// Baskets are streamed one at a time; 1-based ids become 0-based rows,
// duplicates are removed and blank lines skipped.
func ExampleNewLineReader() {
	in := "1 2 3\r\n\r\n4,5\t5\n"
	r := baskets.NewLineReader(strings.NewReader(in), baskets.LineOptions{Base: 1, N: 100})
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.Line(), b)
	}
	fmt.Printf("%+v\n", r.Stats())
	// Output:
	// 1 [0 1 2]
	// 3 [3 4]
	// {Baskets:2 Items:5 Skipped:0 Empty:1 Duplicates:1}
}

// Bad tokens are errors naming the line.
func ExampleReader_Next() {
	r := baskets.NewLineReader(strings.NewReader("1 2\n3 x\n"), baskets.LineOptions{})
	_, err := r.Next()
	fmt.Println(err)
	_, err = r.Next()
	fmt.Println(err)
	// Output:
	// <nil>
	// baskets: input:2: bad item token "x": not an integer
}

// Transaction exports group rows by invoice; a growing vocabulary maps stock
// codes to rows (save it with the model: ndpp.WithVocab).
func ExampleNewCSVReader() {
	in := "InvoiceNo,StockCode,Description\n" +
		"536365,85123A,\"HEART HOLDER, WHITE\"\n" +
		"536365,71053,LANTERN\n" +
		"536366,85123A,\"HEART HOLDER, WHITE\"\n"
	voc := &ndpp.Vocab{}
	r, err := baskets.NewCSVReader(strings.NewReader(in), baskets.CSVOptions{
		BasketColumn: "InvoiceNo", ItemColumn: "StockCode", Vocab: voc, Grow: true})
	if err != nil {
		log.Fatal(err)
	}
	for {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(b)
	}
	fmt.Println(voc.Tokens())
	// Output:
	// [0 1]
	// [0]
	// [85123A 71053]
}

// The papers' evaluation split, 300 validation and 2000 test baskets, by
// the hold-out rule of every command (HoldOut as a file streams by).
func ExampleHoldOutSlice() {
	data, err := baskets.ReadFile("../../testdata/1_100_100_100_apparel_regs.csv", baskets.LineOptions{Base: 1, N: 100})
	if err != nil {
		log.Fatal(err)
	}
	train, val, test, err := baskets.HoldOutSlice(data, 300, 2000, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(train), len(val), len(test))
	// Output: 12670 300 2000
}
