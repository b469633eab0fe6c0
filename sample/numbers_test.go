package sample

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndpp-go/ndpp/blas"
)

var (
	numbers      = flag.Bool("numbers", false, "run TestSampleNumbers: the tree-against-linear table of BENCHMARKS.md (make bench-sample)")
	numbersSizes = flag.String("numbers.n", "10000,100000,1000000", "TestSampleNumbers: catalogue sizes")
	numbersD     = flag.Int("numbers.d", 50, "TestSampleNumbers: rank parameter d")
)

// TestSampleNumbers prints the table of BENCHMARKS.md (with -numbers): on
// the synthetic orthogonal kernel (Synthetic, d = 50, seed 1) of each n,
// the time per sample of the linear and the tree samplers, measured in
// alternating rounds in this one process (4 rounds, each a quarter of the
// linear samples and then a quarter of the tree samples, one goroutine),
// their preprocessing, the tree's memory and the process's peak resident
// memory, and the expected and observed rejections.
func TestSampleNumbers(t *testing.T) {
	if !*numbers {
		t.Skip("with -numbers (make bench-sample)")
	}
	ctx := context.Background()
	block := DefaultBlock
	if blas.Backend() == "gonum" {
		block = 1 // the faster one in pure Go (BENCHMARKS.md)
	}
	t.Logf("backend %s, linear sampler block %d, d = %d", blas.Backend(), block, *numbersD)
	t.Logf("| n | linear s/sample | tree ms/sample | ratio | linear prep s | tree prep s (proposal + tree) | tree MiB | peak RSS MiB | expected rejections | observed (samples) | mean size: NDPP / proposal |")
	t.Logf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range strings.Split(*numbersSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Synthetic(ctx, n, *numbersD, 1, SyntheticOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		lin, err := New(ctx, m, Options{Block: block})
		if err != nil {
			t.Fatal(err)
		}
		linPrep := time.Since(t0)
		t0 = time.Now()
		p, err := NewProposal(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		propPrep := time.Since(t0)
		t0 = time.Now()
		ts, err := NewTree(ctx, p, TreeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		treePrep := time.Since(t0)
		nLin, nTree := 20, 400
		switch {
		case n >= 1000000:
			nLin = 4
		case n >= 100000:
			nLin = 8
		}
		const rounds = 4
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		var linT, treeT time.Duration
		var buf []int
		for range rounds {
			t0 = time.Now()
			for range nLin / rounds {
				if buf, err = lin.SampleInto(ctx, rng, buf); err != nil {
					t.Fatal(err)
				}
			}
			linT += time.Since(t0)
			t0 = time.Now()
			for range nTree / rounds {
				if buf, err = ts.SampleInto(ctx, rng, buf); err != nil {
					t.Fatal(err)
				}
			}
			treeT += time.Since(t0)
		}
		linPer := linT.Seconds() / float64(nLin)
		treePer := treeT.Seconds() / float64(nTree)
		st := ts.Stats()
		t.Logf("| %d | %.3g | %.3g | %.0f× | %.2f | %.2f (%.2f + %.2f) | %.0f | %.0f | %.1f | %.1f (%d) | %.1f / %.1f |",
			n, linPer, 1000*treePer, linPer/treePer, linPrep.Seconds(), (propPrep + treePrep).Seconds(), propPrep.Seconds(), treePrep.Seconds(),
			float64(ts.Memory())/(1<<20), float64(peakRSS())/(1<<20), p.ExpectedRejections(), float64(st.Tries-st.Samples)/float64(st.Samples), st.Samples,
			p.ExpectedSize(), p.ProposalSize())
	}
}

// peakRSS returns the process's peak resident memory in bytes (VmHWM),
// or 0 where /proc does not give it.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
