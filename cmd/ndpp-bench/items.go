package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	"github.com/ndpp-go/ndpp/detcache"
	"github.com/ndpp-go/ndpp/internal/outfile"
	"github.com/ndpp-go/ndpp/ndpp"
	"github.com/ndpp-go/ndpp/ndpp/items"
	"github.com/ndpp-go/ndpp/ndpp/npz"
	"github.com/ndpp-go/ndpp/stream"
)

func init() {
	register(&command{
		name:          "items",
		globals:       gBackend | gQuiet,
		summary:       "write a synthetic stream of item vectors (the input of infer --items) without holding it",
		run:           runItems,
		interruptible: true,
	})
}

// progressEvery is the interval of the progress lines of long streams when
// stderr is not a terminal (a terminal gets a progress bar).
const progressEvery = 10 * time.Second

type itemsFlags struct {
	g         globals
	synthetic bool
	n, d      int
	diag      float64
	seed      uint64
	format    string
	float32   bool
	kernelOut string
	out       string
}

func runItems(e *env, args []string) error {
	var f itemsFlags
	fs := newFlagSet(e, "items", "write the items of the seeded random model of infer --synthetic (same --n, --d, --diag, --seed) as a stream of vectors, one item at a time",
		"ndpp-bench items --synthetic --n 10000000 --d 10 --seed 1 --kernel-out K.npz | ndpp-bench infer --items - --kernel K.npz --algos online-lss", &f.g)
	fs.BoolVar(&f.synthetic, "synthetic", false, "the stream of infer --synthetic's model (required: the only source)")
	fs.IntVar(&f.n, "n", 100000, "number of items")
	fs.IntVar(&f.d, "d", 10, "rank parameter d")
	fs.Float64Var(&f.diag, "diag", 0, "add a diagonal δᵢ = X·e^{N(0,1)} (as infer --synthetic --diag); rows then end with δ")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic model")
	fs.StringVar(&f.format, "format", "npy", "npy (float64 rows [v; b; δ], ids = row positions) or text (one line per item: id v… b… [δ])")
	fs.BoolVar(&f.float32, "float32", false, "npy: write float32 values (half the bytes; not the model's values)")
	fs.StringVar(&f.kernelOut, "kernel-out", "", "also write the kernel as a model file for infer --kernel: C, the first item, and its diagonal entry with --diag (- for standard output, when --out is a file)")
	fs.StringVar(&f.out, "out", "-", "output file (written atomically), or - for standard output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.g.apply(); err != nil {
		return err
	}
	switch {
	case !f.synthetic:
		return usagef("give --synthetic (the only source of items)")
	case f.n < 1 || f.d < 1:
		return usagef("--n and --d must be ≥ 1 (got %d, %d)", f.n, f.d)
	case !(f.diag >= 0) || f.diag > 1e300:
		return usagef("--diag must be a finite number ≥ 0 (got %v)", f.diag)
	case f.format != items.FormatNPY && f.format != items.FormatText:
		return usagef("--format must be npy or text (got %q)", f.format)
	case f.float32 && f.format != items.FormatNPY:
		return usagef("--float32 applies to --format npy only")
	}
	if err := checkFiles(nil, []outfile.File{stdFile("--out", f.out), stdFile("--kernel-out", f.kernelOut)}); err != nil {
		return err
	}
	ctx := e.context()
	src, err := items.NewSynthetic(ctx, f.n, f.d, f.seed, ndpp.RandomOptions{Diag: f.diag})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return usagef("%v", err)
	}
	kern := src.Kernel()
	// The kernel file is written before the first byte of the stream, so
	// that infer --items, which waits for the stream's first bytes before
	// it reads --kernel, finds it when the two run in a pipe.
	first, err := src.Next(4096)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stopped before the first item: %w", err)
	}
	if f.kernelOut != "" {
		if err := writeKernel(f.kernelOut, e.stdout, kern, first[0]); err != nil {
			return err
		}
	}
	bar := newProgress(e, &f.g, int64(f.n), "items")
	start, last := time.Now(), time.Now()
	written := 0
	write := func(w io.Writer) error {
		var wr *items.Writer
		if f.format == items.FormatNPY {
			if wr, err = items.NewNPYWriter(w, kern, f.n, f.float32); err != nil {
				return err
			}
		} else {
			wr = items.NewTextWriter(w, kern)
		}
		for chunk := first; ; {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped after %d of %d items: %w", written, f.n, err)
			}
			if err := wr.Write(chunk); err != nil {
				return fmt.Errorf("writing the items: %w", err)
			}
			written += len(chunk)
			bar.Add(len(chunk))
			if bar == nil && !f.g.quiet && time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(e.stderr, "items: %d of %d written, %.3g items/s\n", written, f.n, float64(written)/time.Since(start).Seconds())
			}
			if chunk, err = src.Next(4096); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
		}
		if err := wr.Close(); err != nil {
			return fmt.Errorf("writing the items: %w", err)
		}
		return nil
	}
	if err := outfile.WriteStd(f.out, e.stdout, write); err != nil {
		return err
	}
	bar.Finish()
	if !f.g.quiet {
		fmt.Fprintf(e.stderr, "items: %d items, d = %d, %s, in %.2fs\n", f.n, f.d, f.format, time.Since(start).Seconds())
	}
	return nil
}

// writeKernel writes the kernel as a one-item model file (C, the stream's
// first item and its diagonal entry), which infer --kernel reads only the
// kernel from, to path or, for "-", to stdout.
func writeKernel(path string, stdout io.Writer, k ndpp.Kernel, first ndpp.Item) error {
	var opts []ndpp.Option
	if k.Diag {
		opts = append(opts, ndpp.WithDiag([]float64{first.Delta}))
	}
	m, err := ndpp.NewFromRows(1, k.D, first.V, first.B, k.C, opts...)
	if err != nil {
		return fmt.Errorf("the kernel file: %w", err)
	}
	if err := outfile.WriteStd(path, stdout, func(w io.Writer) error { return npz.Write(w, m) }); err != nil {
		return fmt.Errorf("writing the kernel file: %w", err)
	}
	return nil
}

// itemsProgress counts the items read from a stream and reports progress:
// a bar on a terminal, otherwise a line every progressEvery for long
// streams (items, items/s and the first solver's current value).
type itemsProgress struct {
	src     stream.ItemSource
	e       *env
	quiet   bool
	bar     *progress
	solvers []stream.Solver
	start   time.Time
	last    time.Time
	read    int64
}

func (p *itemsProgress) Next(max int) ([]ndpp.Item, error) {
	its, err := p.src.Next(max)
	p.read += int64(len(its))
	p.bar.Add(len(its))
	if p.bar == nil && !p.quiet && time.Since(p.last) >= progressEvery {
		p.last = time.Now()
		s := p.solvers[0]
		v := "f=0"
		if sv := s.Value(); !sv.Zero {
			v = fmt.Sprintf("log f(S) = %.4f", sv.Log)
		}
		fmt.Fprintf(p.e.stderr, "infer: %d items read, %.3g items/s; %s: |S| = %d, %s\n", p.read,
			float64(p.read)/time.Since(p.start).Seconds(), s.Name(), len(s.Solution()), v)
	}
	return its, err
}

// runItems is infer --items: the online algorithms side by side over one
// pass of a stream of item vectors.
func (f *inferFlags) runItems(e *env, algos []string) error {
	all := false
	for _, a := range strings.Split(f.algos, ",") {
		all = all || strings.TrimSpace(a) == "all"
	}
	var online []string
	for _, a := range algos {
		switch a {
		case stream.NameOfflineGreedy, stream.NameLocalSearch:
			if !all || a == stream.NameLocalSearch {
				return usagef("--algos %s needs all items in memory (a model, --model or --synthetic); with --items the online algorithms run", a)
			}
		default:
			online = append(online, a)
		}
	}
	switch {
	case f.ls.polish:
		return usagef("--polish needs all items in memory (a model); not with --items")
	case f.order != "id":
		return usagef("--order applies to models; a stream of --items is read in its own order")
	case f.diag != 0:
		return usagef("--diag applies to --synthetic models only")
	}
	var in io.Reader = e.stdin
	name := "stdin"
	if f.items != "-" {
		file, err := os.Open(f.items)
		if err != nil {
			return usageError{err.Error()}
		}
		defer file.Close()
		in, name = file, f.items
	}
	if file, ok := in.(*os.File); ok {
		items.GrowPipe(file, 1<<20) // a writer into a pipe runs up to 1 MiB ahead
	}
	// Wait for the stream's first bytes before reading the kernel file: a
	// writer in the same pipe (ndpp-bench items --kernel-out) writes it
	// first.
	br := bufio.NewReaderSize(in, 1<<16)
	if _, err := br.Peek(1); err != nil && err != io.EOF {
		return fmt.Errorf("--items %s: %w", name, err)
	}
	kern, err := npz.LoadKernel(f.kernel)
	if err != nil {
		return usageError{err.Error()}
	}
	if r := kern.MaxRank(-1); f.k > r {
		if kern.Shared {
			return usagef("--k %d exceeds d = %d, the rank of a kernel with B = V and no diagonal (every larger set has determinant 0)", f.k, r)
		}
		return usagef("--k %d exceeds 2d = %d, the rank of a kernel without a diagonal (every larger set has determinant 0)", f.k, r)
	}
	rd, err := items.Open(br, kern, items.Options{Format: f.format, ReadAhead: f.readAhead})
	if err != nil {
		return usagef("--items %s: %v", name, err)
	}
	defer rd.Close()
	n := rd.Len()
	switch {
	case n >= 0 && f.nSet && f.n != n:
		return usagef("--n %d, but the stream's header says %d items", f.n, n)
	case n < 0 && f.nSet:
		if f.n < 1 {
			return usagef("--n must be ≥ 1 (got %d)", f.n)
		}
		n = f.n
	}
	var solvers []stream.Solver
	for _, a := range online {
		if a == stream.NameStreamPartition && n < 0 {
			return usagef("stream-partition needs the stream's length in advance: an .npy stream's header gives it; for a text stream give --n")
		}
		var o detcache.Oracle
		if f.oracle == "naive" {
			o, err = detcache.NewNaiveKernel(kern, f.k)
		} else {
			o, err = detcache.NewFastKernel(kern, f.k)
		}
		if err != nil {
			return usagef("%v", err)
		}
		opt := stream.Options{Alpha: f.alpha, StashCap: f.stashCap, OracleOnly: f.oracle == "naive"}
		s, err := stream.NewSolver(a, o, f.k, n, opt)
		if err != nil {
			return usagef("%s: %v", a, err)
		}
		solvers = append(solvers, s)
	}
	if !f.g.quiet {
		what := "B = V, "
		if !kern.Shared {
			what = ""
		}
		if kern.Diag {
			what += "with a diagonal, "
		}
		length := "length unknown"
		if rd.Len() >= 0 {
			length = fmt.Sprintf("%d items", rd.Len())
		}
		gz := ""
		if rd.Gzip() {
			gz = " (gzip)"
		}
		fmt.Fprintf(e.stderr, "infer: items from %s, %s%s, %s; d = %d, %sk = %d, oracle %s\n", name, rd.Format(), gz, length, kern.D, what, f.k, f.oracle)
	}
	total := int64(-1)
	if rd.Len() >= 0 {
		total = int64(rd.Len())
	}
	prog := &itemsProgress{src: rd, e: e, quiet: f.g.quiet, solvers: solvers, start: time.Now(), last: time.Now()}
	prog.bar = newProgress(e, &f.g, total, "infer")
	opt := stream.RunOptions{}
	var traj [][]string
	if f.trajectory != "" {
		opt.Every = f.every
		opt.SolverTrajectory = func(i int, p stream.Point) { traj = append(traj, trajectoryRow(solvers[i].Name(), p)) }
	}
	start := time.Now()
	results, read, err := stream.RunItemsAll(e.context(), solvers, prog, opt)
	if err != nil {
		return fmt.Errorf("--items %s: %w", name, err)
	}
	prog.bar.Finish()
	if !f.g.quiet {
		wall := time.Since(start).Seconds()
		fmt.Fprintf(e.stderr, "infer: %d algorithms over %d items in %.2fs, of which %.2fs (%.0f%%) reading the stream (backend %s)\n",
			len(solvers), prog.read, wall, read.Seconds(), 100*read.Seconds()/max(wall, 1e-9), blas.Backend())
	}
	return f.writeInferResults(e, results, traj, nil)
}
