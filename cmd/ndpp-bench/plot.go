package main

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ndpp-go/ndpp/internal/outfile"
)

// series is one line of a figure.
type series struct {
	name string
	x, y []float64
	// flat draws a dashed horizontal reference line at y[0] across the
	// plot (used for the offline greedy value).
	flat bool
}

// figure describes one of the paper's plots.
type figure struct {
	base          string // file name without extension
	title         string
	xlabel        string
	ylabel        string
	logX, logY    bool
	legendTop     bool // legend in the top right corner (default: bottom right)
	series        []series
	width, height vg.Length
}

// save writes the figure as PNG and SVG into dir and returns the paths.
func (f figure) save(dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = f.xlabel
	p.Y.Label.Text = f.ylabel
	p.Legend.Top = f.legendTop
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(6)
	p.Legend.YOffs = vg.Points(6)
	if f.legendTop {
		p.Legend.YOffs = -vg.Points(6)
	}
	p.Add(plotter.NewGrid())
	// A log axis needs data, all of it positive; otherwise fall back to a
	// linear axis rather than fail (gonum/plot panics on such data).
	okX, okY, any := true, true, false
	for _, s := range f.series {
		for i := range s.y {
			any = true
			if !s.flat && s.x[i] <= 0 {
				okX = false
			}
			if s.y[i] <= 0 {
				okY = false
			}
		}
	}
	f.logX = f.logX && okX && any
	f.logY = f.logY && okY && any
	if f.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if f.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	minX, maxX := 0.0, 1.0
	first := true
	for _, s := range f.series {
		for _, x := range s.x {
			if first || x < minX {
				minX = x
			}
			if first || x > maxX {
				maxX = x
			}
			first = false
		}
	}
	for i, s := range f.series {
		if len(s.y) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(s.x))
		if s.flat {
			pts = append(pts, plotter.XY{X: minX, Y: s.y[0]}, plotter.XY{X: maxX, Y: s.y[0]})
		} else {
			for j := range s.x {
				pts = append(pts, plotter.XY{X: s.x[j], Y: s.y[j]})
			}
		}
		if len(pts) == 1 { // a single sample (e.g. Stream-Partition's final value): a marker
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("figure %s, series %s: %w", f.base, s.name, err)
			}
			sc.GlyphStyle.Color = plotutil.Color(i)
			sc.GlyphStyle.Radius = vg.Points(3)
			p.Add(sc)
			p.Legend.Add(s.name, sc)
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("figure %s, series %s: %w", f.base, s.name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		if s.flat {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
			l.Color = color.Black
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	w, h := f.width, f.height
	if w == 0 {
		w, h = 6*vg.Inch, 4*vg.Inch
	}
	var out []string
	for _, ext := range []string{".png", ".svg"} {
		path := filepath.Join(dir, f.base+ext)
		wt, err := p.WriterTo(w, h, ext[1:])
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", path, err)
		}
		if err := outfile.Write(path, func(out io.Writer) error { _, err := wt.WriteTo(out); return err }); err != nil {
			return nil, fmt.Errorf("figure %s: %w", path, err)
		}
		out = append(out, path)
	}
	return out, nil
}
