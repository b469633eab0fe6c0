package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gonum.org/v1/plot/vg"
)

// The demo writes its measurements as CSV files and draws the figures from
// them; `ndpp-bench figures` redraws them from the same files.
const (
	trajectoryCSV = "trajectories.csv" // algo,items,log_value,zero,size,evals,swaps,stash
	greedyCSV     = "offline_greedy.csv"
	nllCSV        = "nll_time.csv" // mode,seconds,baskets,nll_eps (as learn --trace writes)
)

// trajectoryHeader is the header of trajectory CSV files (demo's
// trajectories.csv and infer --trajectory).
var trajectoryHeader = []string{"algo", "items", "log_value", "zero", "size", "evals", "swaps", "stash"}

// trajRow is one sample of an online algorithm's trajectory.
type trajRow struct {
	algo     string
	items    int64
	logValue float64 // −Inf when zero
	size     int
	evals    int64
	swaps    int64
	stash    int
}

// nllRow is one sample of a learner's negative log-likelihood over time.
type nllRow struct {
	mode    string
	seconds float64
	baskets int
	nll     float64
}

// nllHeader is the header of learning-curve CSV files (the demo's
// nll_time.csv and learn --trace). nll_eps is the negative of the
// learners' objective, −(mean log det(L_S + εI) − log det(L + I)), ε = 1e-5
// (learn.TracePoint): not the negative log-likelihood log P(S), which is
// −Inf for a basket beyond a low-rank model's rank.
var nllHeader = []string{"mode", "seconds", "baskets", "nll_eps"}

// nllHeaderOld is the header files written before the column was named
// nll_eps had (the same figure); figures still reads them.
var nllHeaderOld = []string{"mode", "seconds", "baskets", "nll"}

// csvContent returns the writer of a CSV file's content.
func csvContent(header []string, rows [][]string) func(io.Writer) error {
	return func(f io.Writer) error {
		w := csv.NewWriter(f)
		_ = w.Write(header)
		_ = w.WriteAll(rows)
		return w.Error()
	}
}

// fileWriter writes a file's content: outfile.Write, or outfile.Set.Add
// to replace several files together.
type fileWriter func(path string, write func(io.Writer) error) error

func writeTrajectories(put fileWriter, dir string, rows []trajRow) error {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.algo, strconv.FormatInt(r.items, 10), fmtFloat(r.logValue),
			strconv.FormatBool(math.IsInf(r.logValue, -1)), strconv.Itoa(r.size),
			strconv.FormatInt(r.evals, 10), strconv.FormatInt(r.swaps, 10), strconv.Itoa(r.stash)}
	}
	return put(filepath.Join(dir, trajectoryCSV), csvContent(trajectoryHeader, out))
}

func writeGreedy(put fileWriter, dir string, logValue float64) error {
	return put(filepath.Join(dir, greedyCSV), csvContent([]string{"algo", "log_value"},
		[][]string{{"offline-greedy", fmtFloat(logValue)}}))
}

func writeNLL(put fileWriter, dir string, rows []nllRow) error {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.mode, fmtFloat(r.seconds), strconv.Itoa(r.baskets), fmtFloat(r.nll)}
	}
	return put(filepath.Join(dir, nllCSV), csvContent(nllHeader, out))
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// readCSV reads a CSV file with the given header and returns its rows.
func readCSV(path string, header []string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(header)
	h, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range header {
		if h[i] != header[i] {
			return nil, fmt.Errorf("%s: header %v, want %v", path, h, header)
		}
	}
	var rows [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rec)
	}
}

func parseFloats(path string, line int, fields ...string) ([]float64, error) {
	out := make([]float64, len(fields))
	for i, f := range fields {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: bad number %q", path, line, f)
		}
		out[i] = x
	}
	return out, nil
}

// drawFigures reads the demo's CSV files in dir and writes the paper's
// figures there (PNG and SVG). Missing CSV files skip their figures. Once
// ctx is done (checked before each CSV file is read and each figure is
// drawn) it stops with an error wrapping ctx.Err(), the figures before
// written.
func drawFigures(ctx context.Context, dir string) ([]string, error) {
	var written []string
	stopped := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("figures: stopped after %d files: %w", len(written), err)
		}
		return nil
	}
	if err := stopped(); err != nil {
		return nil, err
	}
	traj, err := readCSV(filepath.Join(dir, trajectoryCSV), trajectoryHeader)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		greedy := math.NaN()
		if g, err := readCSV(filepath.Join(dir, greedyCSV), []string{"algo", "log_value"}); err == nil && len(g) == 1 {
			if v, err := parseFloats(greedyCSV, 1, g[0][1]); err == nil {
				greedy = v[0]
			}
		}
		byAlgo := map[string]*[3]series{}
		var order []string
		for i, rec := range traj {
			nums, err := parseFloats(trajectoryCSV, i+2, rec[1], rec[2], rec[5], rec[6])
			if err != nil {
				return nil, err
			}
			s, ok := byAlgo[rec[0]]
			if !ok {
				s = &[3]series{{name: rec[0]}, {name: rec[0]}, {name: rec[0]}}
				byAlgo[rec[0]] = s
				order = append(order, rec[0])
			}
			if !math.IsInf(nums[1], -1) {
				s[0].x, s[0].y = append(s[0].x, nums[0]), append(s[0].y, nums[1])
			}
			s[1].x, s[1].y = append(s[1].x, nums[0]), append(s[1].y, nums[2])
			s[2].x, s[2].y = append(s[2].x, nums[0]), append(s[2].y, nums[3])
		}
		sort.Strings(order)
		figs := []figure{
			{base: "value_vs_items", title: "Solution value (log det) vs items seen", xlabel: "items seen", ylabel: "log det L_S"},
			{base: "evals_vs_items", title: "Determinant evaluations vs items seen", xlabel: "items seen", ylabel: "determinant evaluations (log scale)", logY: true},
			{base: "swaps_vs_items", title: "Swaps vs items seen", xlabel: "items seen", ylabel: "accepted swaps"},
		}
		for f := range figs {
			for _, a := range order {
				s := byAlgo[a][f]
				if f == 1 { // a log axis needs positive values
					s = positive(s)
				}
				figs[f].series = append(figs[f].series, s)
			}
		}
		if !math.IsNaN(greedy) {
			figs[0].series = append(figs[0].series, series{name: "offline greedy", y: []float64{greedy}, flat: true})
		}
		for _, f := range figs {
			if err := stopped(); err != nil {
				return nil, err
			}
			paths, err := f.save(dir)
			if err != nil {
				return nil, err
			}
			written = append(written, paths...)
		}
	}
	if err := stopped(); err != nil {
		return nil, err
	}
	nll, err := readCSV(filepath.Join(dir, nllCSV), nllHeader)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		if old, oerr := readCSV(filepath.Join(dir, nllCSV), nllHeaderOld); oerr == nil {
			nll, err = old, nil
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		byMode := map[string]*series{}
		var modes []string
		for i, rec := range nll {
			nums, err := parseFloats(nllCSV, i+2, rec[1], rec[3])
			if err != nil {
				return nil, err
			}
			s, ok := byMode[rec[0]]
			if !ok {
				s = &series{name: rec[0] + " learning"}
				byMode[rec[0]] = s
				modes = append(modes, rec[0])
			}
			if math.IsInf(nums[1], 0) || math.IsNaN(nums[1]) {
				continue // a trace set with a zero-determinant basket has no finite NLL
			}
			s.x, s.y = append(s.x, math.Max(nums[0], 1e-3)), append(s.y, nums[1])
		}
		f := figure{base: "nll_vs_time", title: "Validation negative log-likelihood with ε = 1e-5 vs training time",
			xlabel: "seconds (log scale)", ylabel: "negative log-likelihood, ε = 1e-5", logX: true, legendTop: true, width: 6 * vg.Inch, height: 4 * vg.Inch}
		sort.Strings(modes)
		for _, m := range modes {
			f.series = append(f.series, *byMode[m])
		}
		if err := stopped(); err != nil {
			return nil, err
		}
		paths, err := f.save(dir)
		if err != nil {
			return nil, err
		}
		written = append(written, paths...)
	}
	if len(written) == 0 {
		return nil, fmt.Errorf("no demo CSV files (%s, %s) in %s", trajectoryCSV, nllCSV, dir)
	}
	return written, nil
}

func positive(s series) series {
	out := series{name: s.name}
	for i := range s.x {
		if s.y[i] > 0 {
			out.x, out.y = append(out.x, s.x[i]), append(out.y, s.y[i])
		}
	}
	return out
}

func init() {
	register(&command{
		name:          "figures",
		globals:       gQuiet,
		summary:       "redraw the demo's figures (PNG and SVG) from its CSV files",
		interruptible: true,
		run: func(e *env, args []string) error {
			var g globals
			fs := newFlagSet(e, "figures", "redraw the paper's figures from the CSV files a demo run wrote", "ndpp-bench figures --in ndpp-out", &g)
			in := fs.String("in", "ndpp-out", "directory with the demo's CSV files; figures are written there")
			if err := parseFlags(fs, args); err != nil {
				return err
			}
			if err := refuseStd("--in", *in); err != nil {
				return err
			}
			paths, err := drawFigures(e.context(), *in)
			if err != nil {
				return err
			}
			if !g.quiet {
				for _, p := range paths {
					fmt.Fprintln(e.stdout, p)
				}
			}
			return nil
		},
	})
}
