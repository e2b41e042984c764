package main

import (
	"fmt"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writeChart draws one panel per scenario with one bar per library: median
// ns/task, each panel on its own linear scale. A library keeps its colour in
// every panel; a missing bar means the scenario does not apply or failed.
func (r *run) writeChart(w io.Writer) error {
	const cols = 4
	rows := (len(r.scenarios) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, s := range r.scenarios {
		p, err := r.panel(s)
		if err != nil {
			return err
		}
		plots[i/cols][i%cols] = p
	}
	for i := len(r.scenarios); i < rows*cols; i++ {
		plots[i/cols][i%cols] = plot.New() // blank tile
		plots[i/cols][i%cols].HideAxes()
	}
	width, height := 4*vg.Inch*cols, 3.2*vg.Inch*vg.Length(rows)
	canvas := vgsvg.New(width, height)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, draw.New(canvas))
	for i := range plots {
		for j, p := range plots[i] {
			p.Draw(canvases[i][j])
		}
	}
	_, err := canvas.WriteTo(w)
	return err
}

func (r *run) panel(s scenario) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s", s.id, s.title)
	p.Title.TextStyle.Font.Size = vg.Points(8)
	p.Y.Label.Text = "ns per task (median)"
	p.Y.Min = 0
	labels := make([]string, len(r.libraries))
	top := 0.0
	for i, lib := range r.libraries {
		labels[i] = lib.name
		sm, ok := r.summary(s.id, lib.name)
		if !ok {
			continue
		}
		bar, err := plotter.NewBarChart(plotter.Values{sm.ns}, vg.Points(14))
		if err != nil {
			return nil, err
		}
		bar.XMin = float64(i)
		bar.Color = plotutil.Color(i)
		bar.LineStyle.Width = 0
		p.Add(bar)
		top = max(top, sm.ns)
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Y.Max = top * 1.1
	return p, nil
}
