//! Plots: line charts (loss / accuracy curves, per-parameter gradient norms) and heatmaps
//! (‖∂L/∂h_t‖ over steps × time). SVG files carry axis labels and titles as text (rendered by
//! the viewer; no font needed here); PNG files are drawn without text (no font backend is
//! compiled in), for quick looks.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Colours for successive series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// A line chart description.
pub struct LinePlot<'a> {
    /// Title (SVG only).
    pub title: &'a str,
    /// X-axis label (SVG only).
    pub x_label: &'a str,
    /// Y-axis label (SVG only).
    pub y_label: &'a str,
    /// Logarithmic y axis (non-positive values are dropped).
    pub log_y: bool,
    /// `(legend name, points)`.
    pub series: &'a [(String, Vec<(f64, f64)>)],
}

fn is_png(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

fn bounds(pts: impl Iterator<Item = (f64, f64)>) -> Option<(f64, f64, f64, f64)> {
    let mut b: Option<(f64, f64, f64, f64)> = None;
    for (x, y) in pts.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        b = Some(match b {
            None => (x, x, y, y),
            Some((a, c, d, e)) => (a.min(x), c.max(x), d.min(y), e.max(y)),
        });
    }
    b.map(|(x0, x1, y0, y1)| {
        let (x0, x1) = if x1 > x0 { (x0, x1) } else { (x0 - 0.5, x0 + 0.5) };
        let pad = if y1 > y0 { 0.05 * (y1 - y0) } else { 0.5 * y0.abs().max(1e-3) };
        (x0, x1, y0 - pad, y1 + pad)
    })
}

/// Draws a line chart to `path` (`.svg` or `.png`).
pub fn line_plot(path: &Path, p: &LinePlot<'_>) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: plotting failed: {e}", path.display());
    let size = (900, 540);
    if is_png(path) {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw_lines(&root, p, false).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw_lines(&root, p, true).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

fn tf(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &LinePlot<'_>, text: bool) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let series: Vec<(String, Vec<(f64, f64)>)> = p
        .series
        .iter()
        .map(|(n, pts)| (n.clone(), pts.iter().filter(|(_, y)| !p.log_y || *y > 0.0).map(|(x, y)| (*x, tf(*y, p.log_y))).collect()))
        .collect();
    let Some((x0, x1, y0, y1)) = bounds(series.iter().flat_map(|(_, v)| v.iter().copied())) else {
        return Ok(()); // nothing to draw: blank chart
    };
    let mut b = ChartBuilder::on(root);
    b.margin(12);
    if text {
        b.caption(p.title, ("sans-serif", 22)).x_label_area_size(40).y_label_area_size(70);
    }
    let mut chart = b.build_cartesian_2d(x0..x1, y0..y1).map_err(|x| e(&x))?;
    let y_label = if p.log_y { format!("log10 {}", p.y_label) } else { p.y_label.to_string() };
    if text {
        chart.configure_mesh().x_desc(p.x_label).y_desc(y_label).draw().map_err(|x| e(&x))?;
    } else {
        chart.configure_mesh().x_labels(0).y_labels(0).draw().map_err(|x| e(&x))?;
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let s = chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2))).map_err(|x| e(&x))?;
        if text {
            s.label(name.as_str()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
    }
    if text && series.len() > 1 {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    }
    Ok(())
}

/// Draws `rows` (one row per y value, e.g. per logged step; columns e.g. time steps) as a
/// heatmap to `path` (`.svg` or `.png`), colour = log10 of the value.
pub fn heatmap(path: &Path, title: &str, x_label: &str, y_label: &str, y_values: &[f64], rows: &[Vec<f64>]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: plotting failed: {e}", path.display());
    let size = (900, 540);
    if is_png(path) {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw_heat(&root, title, x_label, y_label, y_values, rows, false).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw_heat(&root, title, x_label, y_label, y_values, rows, true).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

fn draw_heat<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    y_values: &[f64],
    rows: &[Vec<f64>],
    text: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    if rows.is_empty() || cols == 0 {
        return Ok(());
    }
    let logs: Vec<f64> = rows.iter().flatten().filter(|v| **v > 0.0).map(|v| v.log10()).collect();
    let lo = logs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let mut b = ChartBuilder::on(root);
    b.margin(12);
    if text {
        b.caption(format!("{title} (colour: log10, {lo:.2} … {hi:.2})"), ("sans-serif", 20)).x_label_area_size(40).y_label_area_size(70);
    }
    let n = rows.len();
    let mut chart = b.build_cartesian_2d(0f64..cols as f64, 0f64..n as f64).map_err(|x| e(&x))?;
    let ylab = |v: &f64| {
        let i = (*v as usize).min(n - 1);
        y_values.get(i).map_or(String::new(), |s| format!("{s}"))
    };
    if text {
        chart.configure_mesh().disable_mesh().x_desc(x_label).y_desc(y_label).y_label_formatter(&ylab).draw().map_err(|x| e(&x))?;
    }
    let cells = rows.iter().enumerate().flat_map(|(r, row)| {
        row.iter().enumerate().map(move |(c, v)| {
            let f = if *v > 0.0 { ((v.log10() - lo) / span).clamp(0.0, 1.0) } else { 0.0 };
            let col = colormap(f);
            Rectangle::new([(c as f64, r as f64), (c as f64 + 1.0, r as f64 + 1.0)], col.filled())
        })
    });
    chart.draw_series(cells).map_err(|x| e(&x))?;
    Ok(())
}

/// Dark blue → teal → yellow (viridis-like) for `f ∈ [0, 1]`.
fn colormap(f: f64) -> RGBColor {
    let stops = [(68.0, 1.0, 84.0), (33.0, 145.0, 140.0), (253.0, 231.0, 37.0)];
    let x = f.clamp(0.0, 1.0) * 2.0;
    let i = (x.floor() as usize).min(1);
    let t = x - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let m = |p: f64, q: f64| (p + (q - p) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// Draws a function sampled on a regular grid (`grid[row][col]`, row `r` at
/// `y = y0 + r·(y1 − y0)/(rows − 1)`, column likewise in x) as a colour map with a **linear**
/// scale, to `path` (`.svg` or `.png`). Used for fitted surfaces and χ maps.
pub fn surface(path: &Path, title: &str, x: (f64, f64), y: (f64, f64), grid: &[Vec<f64>]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: plotting failed: {e}", path.display());
    let size = (640, 600);
    if is_png(path) {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw_surface(&root, title, x, y, grid, false).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw_surface(&root, title, x, y, grid, true).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

fn draw_surface<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, x: (f64, f64), y: (f64, f64), grid: &[Vec<f64>], text: bool) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let rows = grid.len();
    let cols = grid.iter().map(|r| r.len()).max().unwrap_or(0);
    if rows < 2 || cols < 2 {
        return Ok(());
    }
    let finite = grid.iter().flatten().filter(|v| v.is_finite());
    let lo = finite.clone().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let (dx, dy) = ((x.1 - x.0) / (cols - 1) as f64, (y.1 - y.0) / (rows - 1) as f64);
    let mut b = ChartBuilder::on(root);
    b.margin(12);
    if text {
        b.caption(format!("{title} (colour: {lo:.3} … {hi:.3})"), ("sans-serif", 18)).x_label_area_size(40).y_label_area_size(50);
    }
    let mut chart = b.build_cartesian_2d((x.0 - dx / 2.0)..(x.1 + dx / 2.0), (y.0 - dy / 2.0)..(y.1 + dy / 2.0)).map_err(|x| e(&x))?;
    if text {
        chart.configure_mesh().disable_mesh().x_desc("x").y_desc("y").draw().map_err(|x| e(&x))?;
    }
    let cells = grid.iter().enumerate().flat_map(|(r, row)| {
        row.iter().enumerate().map(move |(c, v)| {
            let f = if v.is_finite() { (v - lo) / span } else { 0.0 };
            let (cx, cy) = (x.0 + c as f64 * dx, y.0 + r as f64 * dy);
            Rectangle::new([(cx - dx / 2.0, cy - dy / 2.0), (cx + dx / 2.0, cy + dy / 2.0)], colormap(f).filled())
        })
    });
    chart.draw_series(cells).map_err(|x| e(&x))?;
    Ok(())
}
