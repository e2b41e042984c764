package main

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writeChart draws one panel per scenario with one bar per library: median
// ns/task, each panel on its own linear scale. A library keeps its colour in
// every panel; a missing bar means the scenario does not apply or failed.
// The relay, a reference rather than a pool, is a grey bar with a dashed
// outline, labelled "relay (floor)", and a dashed grey line across the panel
// at its height.
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
	if s.needs == "queue" {
		p.Y.Label.Text = "Submit ns per queued task (median)"
	}
	p.Y.Min = 0
	labels := make([]string, len(r.libraries))
	top := 0.0
	floorNs := math.NaN()
	for i, lib := range r.libraries {
		labels[i] = lib.name
		if lib.name == floor {
			labels[i] = floor + " (floor)"
		}
		sm, ok := r.summary(s.id, lib.name)
		if !ok {
			continue
		}
		bar, err := plotter.NewBarChart(plotter.Values{sm.ns}, vg.Points(14))
		if err != nil {
			return nil, err
		}
		bar.XMin = float64(i)
		bar.Color = colorOf(lib.name)
		bar.LineStyle.Width = 0
		if lib.name == floor {
			bar.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
			floorNs = sm.ns
		}
		p.Add(bar)
		top = max(top, sm.ns)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5 // every label, bars or not
	if !math.IsNaN(floorNs) {
		line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: floorNs}, {X: p.X.Max, Y: floorNs}})
		if err != nil {
			return nil, err
		}
		line.LineStyle = draw.LineStyle{Color: floorGrey, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
		p.Add(line)
	}
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Y.Max = top * 1.1
	return p, nil
}

// palette gives each library of the suite its own colour (Tableau 10).
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xe1, 0x57, 0x59, 0xff},
	{0x76, 0xb7, 0xb2, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0x9c, 0x75, 0x5f, 0xff},
}

// floorGrey is the relay's colour, outside the palette: it is a reference,
// not a contestant.
var floorGrey = color.RGBA{0xba, 0xb0, 0xac, 0xff}

// colorOf is name's colour: by its place in the suite (the relay aside), so
// that it is the same whichever pools a run selects.
func colorOf(name string) color.Color {
	if name == floor {
		return floorGrey
	}
	i := 0
	for _, l := range libraries {
		switch l.name {
		case floor:
			continue
		case name:
			return palette[i%len(palette)]
		}
		i++
	}
	return color.Black
}
