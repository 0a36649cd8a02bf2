//! Plots: line charts (loss / accuracy curves, per-parameter gradient norms), heat maps
//! (‖∂L/∂h_t‖ over steps × time), surfaces (fitted functions, χ maps) and confusion matrices
//! ([`confusion_heatmap`]).
//!
//! Each plot is written as `.svg` or `.png`, chosen by the file extension, and both come from
//! one drawing routine generic over the plotters backend, so the two cannot disagree: the same
//! title, axes, axis labels, tick labels, legend and cell values. Text is measured (both formats)
//! and rasterised (PNG) with DejaVu Sans, compiled into the program and registered with plotters
//! on first use; no system font is read. In SVG files text stays `<text>` elements.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Display;
use std::path::Path;
use std::sync::OnceLock;

/// The family every text style here uses (plotters' default family as well, so its own
/// defaults find the font too).
const FONT: &str = "sans-serif";

/// Registers the embedded DejaVu Sans as [`FONT`]. Runs once per process; without it plotters
/// can neither measure text (layout fails for SVG too) nor draw it in PNGs.
fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded DejaVu Sans font could not be loaded".into())
    }
}

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

/// Text sizes in plotters' units (the em is size / 1.24 pixels).
const TITLE_SIZE: f64 = 24.0;
const DESC_SIZE: f64 = 18.0;
const LABEL_SIZE: f64 = 15.0;

/// One picture, drawn the same way on any backend: SVG and PNG files of a plot both come from
/// [`Figure::draw`].
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

fn is_png(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// Writes `fig` to `path` (`.png`, otherwise SVG) at `size` pixels.
fn render(path: &Path, size: (u32, u32), fig: &impl Figure) -> Result<(), String> {
    let err = |e: &dyn Display| format!("{}: plotting failed: {e}", path.display());
    ensure_font().map_err(|e| err(&e))?;
    if is_png(path) {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        fig.draw(&root).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        fig.draw(&root).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    }
}

/// Plotters' errors as strings (the callers add the path).
fn e(x: &dyn Display) -> String {
    x.to_string()
}

/// A chart with nothing to show still gets its title and says so, rather than being blank.
fn no_data<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let body = root.titled(title, (FONT, TITLE_SIZE)).map_err(|x| e(&x))?;
    let (w, h) = body.dim_in_pixel();
    let style = TextStyle::from((FONT, DESC_SIZE)).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
    body.draw(&Text::new("no data", (w as i32 / 2, h as i32 / 2), style)).map_err(|x| e(&x))
}

/// A line chart description.
pub struct LinePlot<'a> {
    /// Title.
    pub title: &'a str,
    /// X-axis label.
    pub x_label: &'a str,
    /// Y-axis label.
    pub y_label: &'a str,
    /// Logarithmic y axis (non-positive values are dropped).
    pub log_y: bool,
    /// `(legend name, points)`. The legend is drawn when there are two series or more.
    pub series: &'a [(String, Vec<(f64, f64)>)],
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
    render(path, (900, 540), p)
}

fn tf(v: f64, log: bool) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

impl Figure for LinePlot<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let p = self;
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let series: Vec<(String, Vec<(f64, f64)>)> = p
            .series
            .iter()
            .map(|(n, pts)| (n.clone(), pts.iter().filter(|(_, y)| !p.log_y || *y > 0.0).map(|(x, y)| (*x, tf(*y, p.log_y))).collect()))
            .collect();
        let Some((x0, x1, y0, y1)) = bounds(series.iter().flat_map(|(_, v)| v.iter().copied())) else {
            return no_data(root, p.title);
        };
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .margin_right(24)
            .caption(p.title, (FONT, TITLE_SIZE))
            .x_label_area_size(52)
            .y_label_area_size(84)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| e(&x))?;
        let y_label = if p.log_y { format!("log10 {}", p.y_label) } else { p.y_label.to_string() };
        chart
            .configure_mesh()
            .x_desc(p.x_label)
            .y_desc(y_label)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let s = chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2))).map_err(|x| e(&x))?;
            s.label(name.as_str()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        if series.len() > 1 {
            chart
                .configure_series_labels()
                .label_font((FONT, LABEL_SIZE))
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|x| e(&x))?;
        }
        Ok(())
    }
}

/// A heat map: one row per y value, colour = log10 of the value.
struct Heat<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    y_values: &'a [f64],
    rows: &'a [Vec<f64>],
}

/// Draws `rows` (one row per y value, e.g. per logged step; columns e.g. time steps) as a
/// heatmap to `path` (`.svg` or `.png`), colour = log10 of the value.
pub fn heatmap(path: &Path, title: &str, x_label: &str, y_label: &str, y_values: &[f64], rows: &[Vec<f64>]) -> Result<(), String> {
    render(path, (900, 540), &Heat { title, x_label, y_label, y_values, rows })
}

impl Figure for Heat<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let Heat { title, x_label, y_label, y_values, rows } = *self;
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        if rows.is_empty() || cols == 0 {
            return no_data(root, title);
        }
        let logs: Vec<f64> = rows.iter().flatten().filter(|v| **v > 0.0).map(|v| v.log10()).collect();
        let lo = logs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        let n = rows.len();
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .margin_right(24)
            .caption(format!("{title} (colour: log10, {lo:.2} … {hi:.2})"), (FONT, TITLE_SIZE - 2.0))
            .x_label_area_size(52)
            .y_label_area_size(84)
            .build_cartesian_2d(0f64..cols as f64, -0.5f64..n as f64 - 0.5)
            .map_err(|x| e(&x))?;
        // Row r spans r ± 0.5, so a tick at an integer is the middle of a row: it gets that
        // row's y value, ticks between rows get none.
        let ylab = |v: &f64| {
            let r = v.round();
            if (v - r).abs() > 1e-6 || r < 0.0 {
                return String::new();
            }
            y_values.get(r as usize).map_or(String::new(), |s| format!("{s}"))
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .y_label_formatter(&ylab)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .draw()
            .map_err(|x| e(&x))?;
        let cells = rows.iter().enumerate().flat_map(|(r, row)| {
            row.iter().enumerate().map(move |(c, v)| {
                let f = if *v > 0.0 { ((v.log10() - lo) / span).clamp(0.0, 1.0) } else { 0.0 };
                Rectangle::new([(c as f64, r as f64 - 0.5), (c as f64 + 1.0, r as f64 + 0.5)], colormap(f).filled())
            })
        });
        chart.draw_series(cells).map_err(|x| e(&x))?;
        Ok(())
    }
}

/// Dark blue → teal → yellow (viridis-like) for `f ∈ [0, 1]`.
fn colormap(f: f64) -> RGBColor {
    ramp(&[(68.0, 1.0, 84.0), (33.0, 145.0, 140.0), (253.0, 231.0, 37.0)], f)
}

/// Piecewise-linear colour ramp through `stops` (evenly spaced) at `f ∈ [0, 1]`.
fn ramp(stops: &[(f64, f64, f64)], f: f64) -> RGBColor {
    let segs = stops.len() - 1;
    let x = f.clamp(0.0, 1.0) * segs as f64;
    let i = (x.floor() as usize).min(segs - 1);
    let t = x - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let m = |p: f64, q: f64| (p + (q - p) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// A function sampled on a regular grid, colour on a linear scale.
struct Surface<'a> {
    title: &'a str,
    x: (f64, f64),
    y: (f64, f64),
    grid: &'a [Vec<f64>],
}

/// Draws a function sampled on a regular grid (`grid[row][col]`, row `r` at
/// `y = y0 + r·(y1 − y0)/(rows − 1)`, column likewise in x) as a colour map with a **linear**
/// scale, to `path` (`.svg` or `.png`). Used for fitted surfaces and χ maps.
pub fn surface(path: &Path, title: &str, x: (f64, f64), y: (f64, f64), grid: &[Vec<f64>]) -> Result<(), String> {
    render(path, (640, 600), &Surface { title, x, y, grid })
}

impl Figure for Surface<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let Surface { title, x, y, grid } = *self;
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let rows = grid.len();
        let cols = grid.iter().map(|r| r.len()).max().unwrap_or(0);
        if rows < 2 || cols < 2 {
            return no_data(root, title);
        }
        let finite = grid.iter().flatten().filter(|v| v.is_finite());
        let lo = finite.clone().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.copied().fold(f64::NEG_INFINITY, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        let (dx, dy) = ((x.1 - x.0) / (cols - 1) as f64, (y.1 - y.0) / (rows - 1) as f64);
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .margin_right(24)
            .caption(format!("{title} (colour: {lo:.3} … {hi:.3})"), (FONT, TITLE_SIZE - 4.0))
            .x_label_area_size(52)
            .y_label_area_size(66)
            .build_cartesian_2d((x.0 - dx / 2.0)..(x.1 + dx / 2.0), (y.0 - dy / 2.0)..(y.1 + dy / 2.0))
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("x")
            .y_desc("y")
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .draw()
            .map_err(|x| e(&x))?;
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
}

/// Class names longer than this are cut (with "…") in tick labels.
const MAX_NAME_CHARS: usize = 18;
/// Up to this many classes each cell of a confusion matrix carries its count.
const MAX_CLASSES_WITH_COUNTS: usize = 30;

/// A confusion matrix: rows are true classes, columns predicted ones.
struct Confusion<'a> {
    title: &'a str,
    names: &'a [String],
    counts: &'a [Vec<u64>],
    /// Write the count in each cell.
    show_counts: bool,
}

/// Draws a confusion matrix to `path` (`.svg` or `.png`): `counts[t][p]` is the number of
/// examples of true class `t` predicted as class `p`, so rows are true classes (first at the
/// top) and columns predicted classes (first on the left). A cell's colour is its share of its
/// row (white 0 → dark blue 1, scale on the right), so each row reads as that class's recall and
/// confusions; with at most 30 classes the count is written in the cell. Class names are the
/// tick labels on both axes, names over 18 characters cut in the middle; the x labels turn
/// vertical when they do not fit side by side, and with many classes only every k-th name is
/// shown. The picture is 900 × 860 pixels, larger from 10 classes on (at most 1500 × 1460).
///
/// Errors, writing nothing, when the matrix is empty, `class_names` and `counts` differ in
/// length, or a row does not have one entry per class.
pub fn confusion_heatmap(path: &Path, title: &str, class_names: &[String], counts: &[Vec<u64>]) -> Result<(), String> {
    let n = class_names.len();
    let bad = |m: String| Err(format!("{}: confusion matrix: {m}", path.display()));
    if n == 0 && counts.is_empty() {
        return bad("empty (no classes)".into());
    }
    if counts.len() != n {
        return bad(format!("{} class names but {} rows", n, counts.len()));
    }
    if let Some((t, row)) = counts.iter().enumerate().find(|(_, r)| r.len() != n) {
        return bad(format!("row {t} has {} entries, expected {n} (one per class)", row.len()));
    }
    // Larger matrices get a larger picture so that cells (and their counts) stay legible.
    let w = (700 + 22 * n).clamp(900, 1500) as u32;
    render(path, (w, w - 40), &Confusion { title, names: class_names, counts, show_counts: n <= MAX_CLASSES_WITH_COUNTS })
}

/// White → mid blue → dark blue for `f ∈ [0, 1]`.
fn blues(f: f64) -> RGBColor {
    ramp(&[(247.0, 251.0, 255.0), (107.0, 174.0, 214.0), (8.0, 48.0, 107.0)], f)
}

/// `s` cut to [`MAX_NAME_CHARS`] in the middle: both ends are kept because names of one data
/// set often share a prefix ("class 1", "class 2") or a suffix.
fn short_name(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= MAX_NAME_CHARS {
        return s.to_string();
    }
    let head = (MAX_NAME_CHARS - 1) / 2;
    let tail = MAX_NAME_CHARS - 1 - head;
    chars[..head].iter().chain(['…'].iter()).chain(chars[chars.len() - tail..].iter()).collect()
}

impl Figure for Confusion<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let n = self.names.len().min(self.counts.len());
        root.fill(&WHITE).map_err(|x| e(&x))?;
        if n == 0 {
            return no_data(root, self.title);
        }
        let (margin, gap, bar_w) = (14i32, 6i32, 120u32);
        let body = root.titled(self.title, (FONT, TITLE_SIZE)).map_err(|x| e(&x))?;
        let (bw, bh) = body.dim_in_pixel();
        let (main, bar) = body.split_horizontally(bw.saturating_sub(bar_w));

        // Label areas are sized from the names actually drawn, so long names are not clipped.
        let label_style = TextStyle::from((FONT, LABEL_SIZE)).color(&BLACK);
        let names: Vec<String> = self.names.iter().take(n).map(|s| short_name(s)).collect();
        let mut name_w = 0i32;
        for s in &names {
            name_w = name_w.max(root.estimate_text_size(s, &label_style).map_err(|x| e(&x))?.0 as i32);
        }
        let text_h = root.estimate_text_size("Ag", &label_style).map_err(|x| e(&x))?.1 as i32;
        let desc_h = root.estimate_text_size("predicted", &TextStyle::from((FONT, DESC_SIZE))).map_err(|x| e(&x))?.1 as i32;
        let y_area = name_w + gap + desc_h + 2 * gap;
        let plot_w = (bw as i32 - bar_w as i32 - 2 * margin - y_area).max(1);
        let cell_w = plot_w as f64 / n as f64;
        // Horizontal x labels only when every one fits in its column.
        let rotate = (name_w + gap) as f64 > cell_w;
        let x_area = if rotate { name_w } else { text_h } + gap + desc_h + 2 * gap;
        let plot_h = (bh as i32 - 2 * margin - x_area).max(1);
        let cell_h = plot_h as f64 / n as f64;
        // Show every step-th name so that neighbouring labels do not overlap.
        let along_x = if rotate { text_h + 2 } else { name_w + gap };
        let step_x = ((along_x as f64 / cell_w).ceil() as usize).max(1);
        let step_y = (((text_h + 2) as f64 / cell_h).ceil() as usize).max(1);

        let nf = n as f64;
        let mut chart = ChartBuilder::on(&main)
            .margin(margin)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(0f64..nf, 0f64..nf)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc("predicted")
            .y_desc("true")
            .axis_desc_style((FONT, DESC_SIZE))
            .draw()
            .map_err(|x| e(&x))?;

        // True class t is drawn in the band y ∈ [n − t − 1, n − t] so that class 0 is on top.
        let fractions: Vec<Vec<f64>> = self.counts[..n]
            .iter()
            .map(|row| {
                // Summed as f64: a u64 sum of huge counts could overflow.
                let total: f64 = row.iter().map(|&c| c as f64).sum();
                row.iter().take(n).map(|&c| if total == 0.0 { 0.0 } else { c as f64 / total }).collect()
            })
            .collect();
        let cell = |t: usize, p: usize| [(p as f64, nf - t as f64 - 1.0), (p as f64 + 1.0, nf - t as f64)];
        let cells = (0..n).flat_map(|t| (0..n).map(move |p| (t, p)));
        chart
            .draw_series(cells.clone().map(|(t, p)| Rectangle::new(cell(t, p), blues(fractions[t].get(p).copied().unwrap_or(0.0)).filled())))
            .map_err(|x| e(&x))?;
        if self.show_counts {
            let grid = RGBColor(200, 200, 200);
            chart.draw_series(cells.clone().map(|(t, p)| Rectangle::new(cell(t, p), grid.stroke_width(1)))).map_err(|x| e(&x))?;
            let max_digits = self.counts[..n].iter().flatten().map(|c| c.to_string().len()).max().unwrap_or(1) as f64;
            // Digits are about 0.51·size pixels wide and 0.6·size tall in DejaVu Sans.
            let size = (1.7 * cell_w / max_digits).min(0.9 * cell_h).min(LABEL_SIZE + 1.0);
            let counts = cells.map(|(t, p)| {
                let f = fractions[t].get(p).copied().unwrap_or(0.0);
                let ink = if f > 0.5 { &WHITE } else { &BLACK };
                let style = TextStyle::from((FONT, size)).color(ink).pos(Pos::new(HPos::Center, VPos::Center));
                Text::new(self.counts[t].get(p).copied().unwrap_or(0).to_string(), (p as f64 + 0.5, nf - t as f64 - 0.5), style)
            });
            chart.draw_series(counts).map_err(|x| e(&x))?;
        }

        // Tick labels: names beside the rows and under the columns, in root coordinates.
        let (ox, oy) = root.get_base_pixel();
        let at = |c: (f64, f64)| {
            let (x, y) = chart.backend_coord(&c);
            (x - ox, y - oy)
        };
        let (x_left, y_bottom) = at((0.0, 0.0));
        for (i, name) in names.iter().enumerate() {
            if i % step_y == 0 {
                let (_, y) = at((0.0, nf - i as f64 - 0.5));
                let style = label_style.pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(name.as_str(), (x_left - gap, y), style)).map_err(|x| e(&x))?;
            }
            if i % step_x == 0 {
                let (x, _) = at((i as f64 + 0.5, 0.0));
                let style = if rotate {
                    // Reads bottom to top and ends just under the axis.
                    label_style.transform(FontTransform::Rotate270).pos(Pos::new(HPos::Right, VPos::Center))
                } else {
                    label_style.pos(Pos::new(HPos::Center, VPos::Top))
                };
                root.draw(&Text::new(name.as_str(), (x, y_bottom + gap), style)).map_err(|x| e(&x))?;
            }
        }

        // Colour scale beside the matrix, spanning its height; drawn by hand (in root pixels)
        // because plotters' right-hand axis puts its description partly outside the image.
        let (_, top) = at((0.0, nf));
        let bar_x = bar.get_base_pixel().0 - ox + gap;
        let strip_w = 22;
        let px = |f: f64| y_bottom - (f * (y_bottom - top) as f64).round() as i32;
        let steps = 100;
        for i in 0..steps {
            let (a, b) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
            root.draw(&Rectangle::new([(bar_x, px(b)), (bar_x + strip_w, px(a))], blues((a + b) / 2.0).filled())).map_err(|x| e(&x))?;
        }
        root.draw(&Rectangle::new([(bar_x, top), (bar_x + strip_w, y_bottom)], BLACK.stroke_width(1))).map_err(|x| e(&x))?;
        for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
            let (x, y) = (bar_x + strip_w, px(f));
            root.draw(&PathElement::new(vec![(x, y), (x + 4, y)], BLACK.stroke_width(1))).map_err(|x| e(&x))?;
            root.draw(&Text::new(format!("{f}"), (x + 7, y), label_style.pos(Pos::new(HPos::Left, VPos::Center)))).map_err(|x| e(&x))?;
        }
        let desc = label_style.transform(FontTransform::Rotate270).pos(Pos::new(HPos::Center, VPos::Top));
        let desc_x = bar_x - gap + bar_w as i32 - gap - text_h;
        root.draw(&Text::new("share of the true class", (desc_x, (top + y_bottom) / 2), desc)).map_err(|x| e(&x))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chi-plot-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn decode(path: &Path) -> image::RgbImage {
        image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).to_rgb8()
    }

    /// Pixels in `x0..x1 × y0..y1` dark enough to be text or axis ink.
    fn dark(img: &image::RgbImage, (x0, x1): (u32, u32), (y0, y1): (u32, u32)) -> usize {
        (y0..y1).flat_map(|y| (x0..x1).map(move |x| (x, y))).filter(|&(x, y)| img.get_pixel(x, y).0.iter().all(|&c| c < 100)).count()
    }

    /// The contents of the `<text>` elements of an SVG file.
    fn svg_texts(path: &Path) -> Vec<String> {
        let svg = std::fs::read_to_string(path).unwrap();
        svg.split("<text").skip(1).map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim().to_string()).collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Renders `fig` into an RGB buffer, as the PNG path does before encoding.
    fn pixels(fig: &impl Figure, size: (u32, u32)) -> Vec<u8> {
        ensure_font().unwrap();
        let mut buf = vec![0u8; (size.0 * size.1 * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
            fig.draw(&root).unwrap();
            root.present().unwrap();
        }
        buf
    }

    fn curves() -> Vec<(String, Vec<(f64, f64)>)> {
        let f = |k: f64| (0..50).map(|i| (i as f64, (-(i as f64) / k).exp())).collect();
        vec![("train".to_string(), f(10.0)), ("test".to_string(), f(20.0))]
    }

    #[test]
    fn png_line_plot_draws_title_and_tick_labels() {
        let d = dir("lines");
        let series = curves();
        let plot = |title| LinePlot { title, x_label: "step", y_label: "loss", log_y: false, series: &series };
        let (with, without) = (d.join("with.png"), d.join("without.png"));
        line_plot(&with, &plot("training loss")).unwrap();
        line_plot(&without, &plot("")).unwrap();
        let (a, b) = (decode(&with), decode(&without));
        assert_eq!(a.dimensions(), (900, 540));
        // The title is centred in the top band; nothing else is drawn there.
        let band = ((300, 600), (0, 36));
        assert!(dark(&a, band.0, band.1) > 100, "title band of {} has no text", with.display());
        assert_eq!(dark(&b, band.0, band.1), 0, "untitled plot has ink in the title band");
        // The y tick labels and the y-axis description sit left of the axis in both.
        for img in [&a, &b] {
            assert!(dark(img, (0, 70), (40, 480)) > 100, "no y tick labels / axis label");
        }
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn shaded_texts_stop_at_the_height_limit() {
        let d = dir("shaded");
        let words: Vec<String> = (0..30).map(|i| format!("word{i}")).collect();
        let scores: Vec<f64> = (0..30).map(|i| (i as f64 - 15.0) / 15.0).collect();
        let docs: Vec<ShadedWords<'_>> = (0..3000).map(|_| ShadedWords { caption: "a text", words: &words, scores: &scores }).collect();
        let p = d.join("many.png");
        shaded_text(&p, "many", &docs).unwrap();
        let h = decode(&p).height() as i32;
        assert!(h > SHADED_MAX_HEIGHT && h < SHADED_MAX_HEIGHT + 200, "height {h}");
        // One text of a million words is cut at the same height.
        let long: Vec<String> = vec!["w".to_string(); 1_000_000];
        let flat = vec![0.5; long.len()];
        let p = d.join("long.png");
        shaded_text(&p, "long", &[ShadedWords { caption: "long", words: &long, scores: &flat }]).unwrap();
        assert!((decode(&p).height() as i32) < SHADED_MAX_HEIGHT + 200);
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn png_heatmap_and_surface_draw_text() {
        let d = dir("heat");
        let rows: Vec<Vec<f64>> = (0..8).map(|r| (0..20).map(|c| 1.0 + (r * c) as f64).collect()).collect();
        let ys: Vec<f64> = (0..8).map(|r| r as f64 * 10.0).collect();
        let p = d.join("heat.png");
        heatmap(&p, "gradient flow", "time step t", "training step", &ys, &rows).unwrap();
        assert!(dark(&decode(&p), (250, 650), (0, 36)) > 100);
        let p = d.join("surface.png");
        surface(&p, "fit", (-1.0, 1.0), (-1.0, 1.0), &rows).unwrap();
        assert!(dark(&decode(&p), (200, 440), (0, 36)) > 100);
        // Nothing to draw still names the chart.
        let p = d.join("empty.png");
        line_plot(&p, &LinePlot { title: "empty", x_label: "x", y_label: "y", log_y: false, series: &[] }).unwrap();
        assert!(dark(&decode(&p), (350, 550), (0, 36)) > 20);
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn png_confusion_heatmap_draws_title_names_and_counts() {
        let d = dir("confusion");
        let counts = vec![vec![50, 3, 0], vec![4, 41, 9], vec![0, 7, 60]];
        let p = d.join("confusion.png");
        confusion_heatmap(&p, "test confusion", &names(&["cat", "dog", "bird"]), &counts).unwrap();
        let img = decode(&p);
        assert_eq!(img.dimensions(), (900, 860));
        assert!(dark(&img, (350, 550), (0, 36)) > 100, "no title");

        // The names and the counts are really drawn: changing either changes pixels.
        let fig = |names, show_counts| Confusion { title: "test confusion", names, counts: &counts, show_counts };
        let (a, b) = (names(&["cat", "dog", "bird"]), names(&["ant", "eel", "fox"]));
        let size = (900, 860);
        let base = pixels(&fig(&a, true), size);
        let differ = |o: &[u8]| base.iter().zip(o).filter(|(x, y)| x != y).count();
        assert!(differ(&pixels(&fig(&b, true), size)) > 100, "class names not drawn");
        assert!(differ(&pixels(&fig(&a, false), size)) > 100, "counts not drawn");
        // The file holds exactly the picture drawn into the buffer.
        assert!(img.as_raw() == &base, "PNG file differs from the in-memory rendering");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn svg_confusion_heatmap_carries_the_same_text() {
        let d = dir("confusion-svg");
        let counts = vec![vec![50, 3], vec![17, 41]];
        let long = "a rather long class name that is cut";
        let p = d.join("c.svg");
        confusion_heatmap(&p, "svg confusion", &names(&["cat", long]), &counts).unwrap();
        let svg = svg_texts(&p);
        for text in ["svg confusion", "predicted", "true", "cat", "a rather…at is cut", "17", "41", "share of the true class"] {
            assert!(svg.iter().any(|t| t == text), "{text:?} missing from the SVG texts {svg:?}");
        }
        assert!(!svg.iter().any(|t| t.contains(long)));
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn confusion_heatmap_rejects_bad_matrices_without_writing() {
        let d = dir("confusion-bad");
        let p = d.join("bad.png");
        let three = names(&["a", "b", "c"]);
        assert!(confusion_heatmap(&p, "t", &[], &[]).unwrap_err().contains("empty"));
        assert!(confusion_heatmap(&p, "t", &three, &[]).unwrap_err().contains("3 class names but 0 rows"));
        assert!(confusion_heatmap(&p, "t", &[], &[vec![]]).unwrap_err().contains("0 class names but 1 rows"));
        assert!(confusion_heatmap(&p, "t", &three, &[vec![1, 2, 3], vec![4, 5, 6]]).unwrap_err().contains("3 class names but 2 rows"));
        assert!(confusion_heatmap(&p, "t", &three, &[vec![1, 2, 3], vec![4, 5], vec![7, 8, 9]]).unwrap_err().contains("row 1 has 2 entries"));
        assert!(!p.exists());
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn confusion_heatmap_one_and_many_classes() {
        let d = dir("confusion-sizes");
        for ext in ["png", "svg"] {
            let p = d.join(format!("one.{ext}"));
            confusion_heatmap(&p, "one class", &names(&["only"]), &[vec![7]]).unwrap();
            assert!(p.exists());
            // Counts whose row sum overflows u64, and an all-zero row.
            let p = d.join(format!("huge.{ext}"));
            confusion_heatmap(&p, "huge", &names(&["a", "b"]), &[vec![u64::MAX, u64::MAX], vec![0, 0]]).unwrap();
            // 100 classes: a heat map without cell text, all-zero rows included.
            let n = 100;
            let names: Vec<String> = (0..n).map(|i| format!("class number {i} with a long name")).collect();
            let counts: Vec<Vec<u64>> = (0..n).map(|t| (0..n).map(|p| if t == 99 { 0 } else if t == p { 9999 } else { ((t * p) % 3) as u64 }).collect()).collect();
            let p = d.join(format!("many.{ext}"));
            confusion_heatmap(&p, "100 classes", &names, &counts).unwrap();
            if ext == "svg" {
                let svg = svg_texts(&p);
                assert!(!svg.iter().any(|t| t == "9999"), "cell counts drawn for 100 classes");
                assert!(svg.iter().any(|t| t == "class nu…long name"));
            }
        }
        std::fs::remove_dir_all(&d).ok();
    }
}

/// One text of [`shaded_text`]: a caption, the words and one score per word.
pub struct ShadedWords<'a> {
    /// The heading above the words (cut to one line with `…` when longer).
    pub caption: &'a str,
    /// The words, in order.
    pub words: &'a [String],
    /// One score per word (positive red, negative blue, opacity ∝ |score| / max |score|).
    pub scores: &'a [f64],
}

/// Width of a [`shaded_text`] picture in pixels.
const SHADED_WIDTH: u32 = 1000;

/// A word placed on the picture: its top-left corner, its box size and its colour.
struct PlacedWord {
    x: i32,
    y: i32,
    w: i32,
    h: i32,
    text: String,
    fill: RGBColor,
}

struct ShadedPage {
    title: String,
    captions: Vec<(i32, String)>,
    words: Vec<PlacedWord>,
}

/// The background of a word with score `s` when the largest |score| is `m`: the HTML page's
/// rgba colour composed over white, so the PNG and the page show the same shades.
fn score_fill(s: f64, m: f64) -> RGBColor {
    let a = if m > 0.0 && s.is_finite() { (s.abs() / m).min(1.0) } else { 0.0 };
    let (r, g, b) = if s >= 0.0 { (220.0, 40.0, 40.0) } else { (40.0, 90.0, 220.0) };
    let over = |c: f64| (255.0 - a * (255.0 - c)).round() as u8;
    RGBColor(over(r), over(g), over(b))
}

/// `text` cut at the end with `…` so that it measures at most `width` pixels.
fn fit_line(text: &str, width: i32, measure: &impl Fn(&str) -> Result<(i32, i32), String>) -> Result<String, String> {
    if measure(text)?.0 <= width {
        return Ok(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    // The longest prefix that fits, by bisection on the character count.
    let (mut lo, mut hi) = (0usize, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().chain(['…'].iter()).collect();
        if measure(&candidate)?.0 <= width {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(chars[..lo].iter().chain(['…'].iter()).collect())
}

/// Height at which a [`shaded_text`] picture stops drawing texts (30 MB of RGB at its width):
/// thousands of texts would make a picture of hundreds of thousands of rows that no viewer
/// opens and whose encoding runs out of memory.
pub const SHADED_MAX_HEIGHT: i32 = 10_000;

/// Draws texts with each word's background shaded by its score (the PNG twin of
/// `chi_text::explain::render_html`) to `path` (`.png` or `.svg`); the picture is as tall as
/// the wrapped texts need, up to [`SHADED_MAX_HEIGHT`]: the texts past it are counted in a last
/// line instead of drawn.
pub fn shaded_text(path: &Path, title: &str, docs: &[ShadedWords<'_>]) -> Result<(), String> {
    ensure_font()?;
    let err = |x: &dyn Display| format!("{}: plotting failed: {x}", path.display());
    let font = FontDesc::new(FontFamily::Name(FONT), LABEL_SIZE, FontStyle::Normal);
    let measure = |t: &str| font.box_size(t).map(|(w, h)| (w as i32, h as i32)).map_err(|x| err(&x));
    let (margin, pad, gap) = (20i32, 3i32, 4i32);
    let (_, text_h) = measure("Ag")?;
    let line_h = text_h + 2 * pad + gap;
    let mut y = margin + (TITLE_SIZE as i32) + 2 * gap;
    let mut page = ShadedPage { title: title.to_string(), captions: Vec::new(), words: Vec::new() };
    for (i, d) in docs.iter().enumerate() {
        if d.words.len() != d.scores.len() {
            return Err(format!("{}: {} words but {} scores under {:?}", path.display(), d.words.len(), d.scores.len(), d.caption));
        }
        if y > SHADED_MAX_HEIGHT {
            let rest = format!("… {} more text(s) not drawn: the picture stops at {SHADED_MAX_HEIGHT} pixels", docs.len() - i);
            page.captions.push((y, fit_line(&rest, SHADED_WIDTH as i32 - 2 * margin, &measure)?));
            y += line_h + gap;
            break;
        }
        page.captions.push((y, fit_line(d.caption, SHADED_WIDTH as i32 - 2 * margin, &measure)?));
        y += line_h + gap;
        let m = d.scores.iter().filter(|v| v.is_finite()).map(|v| v.abs()).fold(0.0, f64::max);
        let mut x = margin;
        for (word, &s) in d.words.iter().zip(d.scores) {
            let (w, _) = measure(word)?;
            let w = w + 2 * pad;
            if x > margin && x + w > SHADED_WIDTH as i32 - margin {
                x = margin;
                y += line_h;
                // One text longer than the whole picture is cut where the picture ends.
                if y > SHADED_MAX_HEIGHT {
                    break;
                }
            }
            page.words.push(PlacedWord { x, y, w, h: text_h + 2 * pad, text: word.clone(), fill: score_fill(s, m) });
            x += w + gap;
        }
        y += line_h + 2 * gap;
    }
    render(path, (SHADED_WIDTH, (y + margin) as u32), &page)
}

impl Figure for ShadedPage {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let top = TextStyle::from((FONT, TITLE_SIZE)).color(&BLACK);
        root.draw(&Text::new(self.title.as_str(), (20, 14), top)).map_err(|x| e(&x))?;
        let caption = TextStyle::from((FONT, LABEL_SIZE)).color(&RGBColor(60, 60, 60));
        for (y, c) in &self.captions {
            root.draw(&Text::new(c.as_str(), (20, *y), caption.clone())).map_err(|x| e(&x))?;
        }
        let word = TextStyle::from((FONT, LABEL_SIZE)).color(&BLACK);
        for p in &self.words {
            root.draw(&Rectangle::new([(p.x, p.y), (p.x + p.w, p.y + p.h)], p.fill.filled())).map_err(|x| e(&x))?;
            root.draw(&Text::new(p.text.as_str(), (p.x + 3, p.y + 3), word.clone())).map_err(|x| e(&x))?;
        }
        Ok(())
    }
}

/// One panel of [`scatter_panels`]: points coloured by class.
pub struct ScatterPanel<'a> {
    /// Panel title.
    pub title: &'a str,
    /// The points.
    pub points: &'a [[f64; 2]],
    /// The class of each point (an index into the class names).
    pub classes: &'a [usize],
}

struct Scatter<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    names: &'a [String],
    panels: &'a [ScatterPanel<'a>],
}

/// Side-by-side scatter plots sharing one legend (e.g. document embeddings projected to 2-D
/// before and after training, coloured by label) to `path` (`.png` or `.svg`).
pub fn scatter_panels(path: &Path, title: &str, x_label: &str, y_label: &str, class_names: &[String], panels: &[ScatterPanel<'_>]) -> Result<(), String> {
    if let Some(p) = panels.iter().find(|p| p.points.len() != p.classes.len()) {
        return Err(format!("{}: panel {:?} has {} points but {} classes", path.display(), p.title, p.points.len(), p.classes.len()));
    }
    let w = 560 * panels.len().max(1) as u32;
    render(path, (w, 560), &Scatter { title, x_label, y_label, names: class_names, panels })
}

impl Figure for Scatter<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|x| e(&x))?;
        if self.panels.is_empty() {
            return no_data(root, self.title);
        }
        let body = root.titled(self.title, (FONT, TITLE_SIZE)).map_err(|x| e(&x))?;
        for (area, panel) in body.split_evenly((1, self.panels.len())).iter().zip(self.panels) {
            let Some((x0, x1, y0, y1)) = bounds(panel.points.iter().map(|p| (p[0], p[1]))) else {
                no_data(area, panel.title)?;
                continue;
            };
            let (dx, dy) = (0.05 * (x1 - x0), 0.05 * (y1 - y0));
            let mut chart = ChartBuilder::on(area)
                .margin(12)
                .caption(panel.title, (FONT, DESC_SIZE))
                .x_label_area_size(44)
                .y_label_area_size(60)
                .build_cartesian_2d(x0 - dx..x1 + dx, y0 - dy..y1 + dy)
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(self.x_label)
                .y_desc(self.y_label)
                .label_style((FONT, LABEL_SIZE))
                .axis_desc_style((FONT, LABEL_SIZE))
                .draw()
                .map_err(|x| e(&x))?;
            for (c, name) in self.names.iter().enumerate() {
                let colour = PALETTE[c % PALETTE.len()];
                let pts = panel.points.iter().zip(panel.classes).filter(|(_, &k)| k == c).map(|(p, _)| Circle::new((p[0], p[1]), 3, colour.mix(0.7).filled()));
                chart
                    .draw_series(pts)
                    .map_err(|x| e(&x))?
                    .label(short_name(name))
                    .legend(move |(x, y)| Circle::new((x + 6, y), 4, colour.filled()));
            }
            chart.configure_series_labels().label_font((FONT, LABEL_SIZE)).background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
        }
        Ok(())
    }
}
