package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ndpp-go/ndpp/blas"
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/ndpp-go/ndpp/ndpp"
)

// benchOp is one row family of the backends table: an operation the library
// routes through BLAS, measured at several sizes. setup builds the inputs
// for one size (outside the timing) and returns the function to time.
type benchOp struct {
	name  string
	kind  string // blas.AutoChoice kind, or "" for composite operations
	sizes []int
	label func(size int) string
	setup func(size int) func()
}

// backendOps is the list of operations `ndpp-bench backends` measures. Files
// for the higher layers append their own operations in init functions.
var backendOps = []benchOp{
	{
		name: "gemm", kind: blas.KindGemm, sizes: []int{4, 8, 16, 64, 256},
		label: func(n int) string { return fmt.Sprintf("n=%d", n) },
		setup: func(n int) func() {
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			a, b, c := gauss(rng, n*n), gauss(rng, n*n), make([]float64, n*n)
			return func() {
				blas64.Implementation().Dgemm(gblas.NoTrans, gblas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
			}
		},
	},
	{
		name: "gram", sizes: []int{10, 30, 100},
		label: func(d int) string { return fmt.Sprintf("n=10000/d=%d", d) },
		setup: func(d int) func() {
			rng := rand.New(rand.NewPCG(2, uint64(d)))
			v, b := gauss(rng, 10000*d), gauss(rng, 10000*d)
			return func() { ndpp.GramRows(10000, d, v, b) }
		},
	},
	{
		name: "logdet", kind: blas.KindGetrf, sizes: []int{8, 32, 64, 128, 256},
		label: func(k int) string { return fmt.Sprintf("k=%d", k) },
		setup: func(k int) func() {
			rng := rand.New(rand.NewPCG(3, uint64(k)))
			src := gauss(rng, k*k)
			for i := 0; i < k; i++ {
				src[i*k+i] += float64(k)
			}
			a := mat.NewDense(k, k, nil)
			var lu mat.LU
			return func() {
				a.Copy(mat.NewDense(k, k, src))
				lu.Factorize(a)
				lu.LogDet()
			}
		},
	},
	{
		name: "normaliser", sizes: []int{10, 30, 100},
		label: func(d int) string { return fmt.Sprintf("n=10000/d=%d", d) },
		setup: func(d int) func() {
			m := ndpp.Random(10000, d, 4, ndpp.RandomOptions{})
			v, b, _, c := m.Rows()
			return func() { ndpp.LogNormalizerRows(10000, d, v, b, c) }
		},
	},
	{
		name: "cond-gains", sizes: []int{8, 32},
		label: func(k int) string { return fmt.Sprintf("n=10000/d=50/k=%d", k) },
		setup: func(k int) func() {
			m := ndpp.Random(10000, 50, 5, ndpp.RandomOptions{})
			y := make([]int, k)
			for i := range y {
				y[i] = i * 7
			}
			dst := make([]float64, m.N())
			return func() {
				if err := m.ConditionalGains(y, dst); err != nil {
					panic("ndpp-bench: " + err.Error())
				}
			}
		},
	},
}

func gauss(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// timeOp runs f until minTime has passed (after one warm-up call) and
// returns nanoseconds per call.
func timeOp(f func(), minTime time.Duration) float64 {
	f()
	iters := 1
	for {
		start := time.Now()
		for i := 0; i < iters; i++ {
			f()
		}
		el := time.Since(start)
		if el >= minTime || iters >= 1<<30 {
			return float64(el.Nanoseconds()) / float64(iters)
		}
		next := iters * 2
		if el > 0 {
			next = int(float64(iters) * 1.2 * float64(minTime) / float64(el))
		}
		iters = max(iters+1, min(next, iters*100))
	}
}

type backendRow struct {
	Op       string  `json:"op"`
	Size     string  `json:"size"`
	Backend  string  `json:"backend"`
	NsPerOp  float64 `json:"ns_per_op"`
	AutoPick string  `json:"-"`
}

func init() {
	register(&command{
		name:    "backends",
		globals: gBackend | gJSON | gQuiet,
		summary: "native (OpenBLAS) vs pure-Go timings of every BLAS-routed operation",
		run:     runBackends,
	})
}

func runBackends(e *env, args []string) error {
	var g globals
	fs := newFlagSet(e, "backends", "time each operation the library routes through BLAS with gonum and with OpenBLAS, and show which one auto picks",
		"ndpp-bench backends --ops gemm,logdet --min-time 50ms --json", &g)
	minTime := fs.Duration("min-time", 100*time.Millisecond, "minimum timing per operation, size and backend")
	opsFlag := fs.String("ops", "all", "comma-separated operations to time, or all")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := g.apply(); err != nil {
		return err
	}
	if *minTime <= 0 {
		return usagef("--min-time must be positive")
	}
	ops, err := selectOps(*opsFlag)
	if err != nil {
		return err
	}
	prev := blas.Backend()
	defer func() { _ = blas.Use(prev) }()
	backends := blas.Available()
	if !blas.HasOpenBLAS() && !g.quiet {
		fmt.Fprintln(e.stderr, "ndpp-bench backends: OpenBLAS is not compiled into this binary (build with -tags openblas); timing gonum only")
	}
	var rows []backendRow
	for _, op := range ops {
		for _, size := range op.sizes {
			f := op.setup(size)
			for _, be := range backends {
				if err := blas.Use(be); err != nil {
					return err
				}
				rows = append(rows, backendRow{Op: op.name, Size: op.label(size), Backend: be, NsPerOp: timeOp(f, *minTime)})
			}
			if op.kind != "" {
				rows[len(rows)-1].AutoPick = blas.AutoChoice(op.kind, size)
			}
		}
	}
	if g.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return printBackendTable(e, rows, backends)
}

func selectOps(spec string) ([]benchOp, error) {
	if spec == "all" || spec == "" {
		return backendOps, nil
	}
	var out []benchOp
	for _, name := range strings.Split(spec, ",") {
		found := false
		for _, op := range backendOps {
			if op.name == strings.TrimSpace(name) {
				out = append(out, op)
				found = true
			}
		}
		if !found {
			var names []string
			for _, op := range backendOps {
				names = append(names, op.name)
			}
			return nil, usagef("unknown operation %q (known: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

func printBackendTable(e *env, rows []backendRow, backends []string) error {
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	header := "op\tsize\t"
	for _, be := range backends {
		header += be + " ns/op\t"
	}
	if len(backends) > 1 {
		header += "gonum/openblas\tauto picks\t"
	}
	fmt.Fprintln(tw, header)
	for i := 0; i < len(rows); i += len(backends) {
		group := rows[i : i+len(backends)]
		line := group[0].Op + "\t" + group[0].Size + "\t"
		for _, r := range group {
			line += fmt.Sprintf("%.0f\t", r.NsPerOp)
		}
		if len(backends) > 1 {
			pick := group[len(group)-1].AutoPick
			if pick == "" {
				pick = "per call"
			}
			line += fmt.Sprintf("%.2fx\t%s\t", group[0].NsPerOp/group[1].NsPerOp, pick)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
