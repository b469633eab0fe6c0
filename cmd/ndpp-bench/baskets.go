package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp/baskets"
)

func init() {
	register(&command{
		name:          "baskets",
		globals:       0,
		summary:       "write a synthetic basket file (power-law popularity, co-purchases within item groups) for benchmarks at any scale",
		run:           runBaskets,
		interruptible: true,
	})
}

// basketsCheckEvery is the number of baskets written between two looks at
// the command's context.
const basketsCheckEvery = 4096

type basketsFlags struct {
	g         globals
	synthetic bool
	n         int
	count     int64
	topics    int
	meanSize  float64
	seed      uint64
	out       string
}

func runBaskets(e *env, args []string) error {
	var f basketsFlags
	fs := newFlagSet(e, "baskets", "write a synthetic basket file: one basket per line, 0-based item ids separated by spaces (the format of learn --data); baskets are drawn by ndpp/baskets.NewSynthetic",
		"ndpp-bench baskets --synthetic --n 100000 --count 1000000 --seed 1 --out big.txt", &f.g)
	fs.BoolVar(&f.synthetic, "synthetic", false, "draw seeded random baskets (required: the only source for now)")
	fs.IntVar(&f.n, "n", 10000, "number of items")
	fs.Int64Var(&f.count, "count", 100000, "number of baskets")
	fs.IntVar(&f.topics, "topics", 0, "item groups baskets draw from (default n/100)")
	fs.Float64Var(&f.meanSize, "mean-size", 8, "mean basket size")
	fs.Uint64Var(&f.seed, "seed", 1, "seed")
	fs.StringVar(&f.out, "out", "-", "output file (written atomically), or - for standard output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	if !f.synthetic {
		return usagef("--synthetic is required")
	}
	if err := checkFiles(nil, []outfile.File{stdFile("--out", f.out)}); err != nil {
		return err
	}
	src, err := baskets.NewSynthetic(baskets.SyntheticOptions{N: f.n, Count: f.count, Topics: f.topics, MeanSize: f.meanSize, Seed: f.seed})
	if err != nil {
		return usageError{err.Error()}
	}
	ctx := e.context()
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		var line []byte
		for written := int64(0); ; written++ {
			if written%basketsCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("stopped after %d of %d baskets: %w", written, f.count, err)
				}
			}
			b, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			line = line[:0]
			for k, it := range b {
				if k > 0 {
					line = append(line, ' ')
				}
				line = strconv.AppendInt(line, int64(it), 10)
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	if err := outfile.WriteStd(f.out, e.stdout, write); err != nil {
		return fmt.Errorf("baskets: %w", err)
	}
	return nil
}
