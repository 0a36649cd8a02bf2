//! Plots: line charts (loss / accuracy curves, per-parameter gradient norms), heat maps
//! (‖∂L/∂h_t‖ over steps × time), and surfaces (fitted functions, χ maps).
//!
//! Each plot is written as `.svg` or `.png`, chosen by the file extension, and both come from
//! one drawing routine generic over the plotters backend, so the two cannot disagree: the same
//! title, axes, axis labels, tick labels and legend. Text is measured (both formats) and
//! rasterised (PNG) with DejaVu Sans, compiled into the program and registered with plotters on
//! first use; no system font is read. In SVG files text stays `<text>` elements.

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
}
