// Command ukretail rewrites the UK Online Retail basket file with the item
// ids of Gartrell et al.'s reference loader, so that the paper protocol of
// `ndpp-bench learn` and `eval` holds out the item the reference code holds
// out.
//
//	go run . -parquet online_retail.parquet -baskets uk_retail_baskets.txt -out uk_retail_ids.txt
//
// The reference loader (nonsymmetric-DPP-learning, src/datasets.py,
// load_uk_retail_dataset, and utils.VocabularyMapper) keeps the table's rows
// with Quantity > 0 and numbers each StockCode by its first appearance among
// them, from 1; the paper protocol sorts a basket by these ids and holds out
// the highest. The basket file names items by their codes, in order of first
// appearance within the file, which drops the baskets of more than 100
// items: an item first bought in a dropped basket comes later in the file
// than in the table. The output has the file's baskets, line for line and
// in the same order (so the held-out splits of a seed are the same), each
// code replaced by its reference id.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// row is the part of an Online Retail table row the ids depend on.
type row struct {
	StockCode string `parquet:"StockCode"`
	Quantity  int64  `parquet:"Quantity"`
}

func main() {
	pq := flag.String("parquet", "", "the Online Retail table (online_retail.parquet)")
	in := flag.String("baskets", "", "the basket file (uk_retail_baskets.txt)")
	out := flag.String("out", "", "the basket file to write, with reference ids")
	flag.Parse()
	if *pq == "" || *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ukretail -parquet TABLE -baskets FILE -out FILE")
		os.Exit(2)
	}
	if err := run(*pq, *in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ukretail:", err)
		os.Exit(1)
	}
}

func run(pq, in, out string) error {
	if same(in, out) || same(pq, out) {
		return errors.New("-out names an input file")
	}
	rows, err := parquet.ReadFile[row](pq)
	if err != nil {
		return err
	}
	ids := referenceIDs(rows)
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), ".ukretail-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := rewrite(tmp, f, in, ids); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// same reports whether a and b name the same existing file.
func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// code is a StockCode as the basket file writes it: trimmed, inner spaces
// as underscores (the one such code is "BANK CHARGES").
func code(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), " ", "_")
}

// referenceIDs numbers the codes of the rows with Quantity > 0 by their first
// appearance, from 1.
func referenceIDs(rows []row) map[string]int {
	ids := make(map[string]int)
	for _, r := range rows {
		if r.Quantity <= 0 {
			continue
		}
		c := code(r.StockCode)
		if _, ok := ids[c]; !ok {
			ids[c] = len(ids) + 1
		}
	}
	return ids
}

// rewrite copies the basket lines of r to w with every code replaced by its
// id; a code without one is an error naming the line.
func rewrite(w io.Writer, r io.Reader, name string, ids map[string]int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	bw := bufio.NewWriter(w)
	var line []byte
	for n := 1; sc.Scan(); n++ {
		line = line[:0]
		for j, tok := range strings.Fields(sc.Text()) {
			id, ok := ids[tok]
			if !ok {
				return fmt.Errorf("%s:%d: item %q is not a StockCode of a row with Quantity > 0", name, n, tok)
			}
			if j > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendInt(line, int64(id), 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return bw.Flush()
}
