//! Charts: a campaign's progress over time (from the JSON lines of `OUT/stats.json`) and the
//! experiments' line and bar charts, drawn with plotters as PNG and SVG.

use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One named line of a chart: (x, y) points in x order.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// One chart of a grid: a title, an x-axis label and its lines.
#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub series: Vec<Series>,
}

/// Statistics that say nothing over time, or only restate another one.
const SKIPPED: [&str; 2] = ["run_time", "clients"];
/// The monitor's names, and the title each chart gets.
const TITLES: [(&str, &str); 5] = [
    ("exec_sec", "executions/s"),
    ("executions", "executions"),
    ("corpus", "corpus entries"),
    ("objectives", "findings (solutions)"),
    ("acceptance", "MCMC acceptance rate"),
];

/// Reads `stats.json` (one JSON object per line, appended every few seconds by the broker's
/// monitor) into one series per statistic, x in seconds since the campaign first started.
/// A resumed campaign's monitor counts time from zero again: its lines continue the time axis.
pub fn read_stats(path: &Path) -> Result<Vec<Series>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut series: Vec<Series> = Vec::new();
    let (mut offset, mut last) = (0.0, 0.0);
    for (number, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not a JSON line", path.display(), number + 1))?;
        let Some(fields) = value.as_object() else {
            bail!("{}:{}: not a JSON object", path.display(), number + 1);
        };
        let run_time = fields
            .get("run_time")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        if run_time < last {
            offset += last;
        }
        last = run_time;
        for (name, field) in fields {
            if SKIPPED.contains(&name.as_str()) {
                continue;
            }
            let Some(y) = number_of(field) else { continue };
            let point = (offset + run_time, y);
            match series.iter_mut().find(|s| &s.label == name) {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    label: name.clone(),
                    points: vec![point],
                }),
            }
        }
    }
    Ok(series)
}

/// A statistic's value: a plain number, or LibAFL's user statistic `{"Number": n}`,
/// `{"Float": x}`, `{"Percent": fraction}` (as a percentage).
fn number_of(value: &serde_json::Value) -> Option<f64> {
    if let Some(x) = value.as_f64() {
        return Some(x);
    }
    let (kind, inner) = value.as_object()?.iter().next()?;
    let x = inner.as_f64()?;
    Some(if kind == "Percent" { 100.0 * x } else { x })
}

/// Draws the charts of a campaign directory into `OUT/plots/campaign.{png,svg}` and returns
/// the files written.
pub fn plot_campaign(out: &Path) -> Result<Vec<PathBuf>> {
    crate::ops::format_version::check(out, "campaign")?;
    let series = read_stats(&out.join("stats.json"))?;
    if series.iter().all(|s| s.points.len() < 2) {
        bail!(
            "{} has fewer than two samples: run the campaign longer",
            out.join("stats.json").display()
        );
    }
    let rank = |label: &str| TITLES.iter().position(|(n, _)| *n == label).unwrap_or(TITLES.len());
    let mut ordered = series;
    ordered.sort_by(|a, b| rank(&a.label).cmp(&rank(&b.label)).then(a.label.cmp(&b.label)));
    let panels: Vec<Panel> = ordered
        .into_iter()
        .map(|s| {
            let title = TITLES
                .iter()
                .find(|(n, _)| *n == s.label)
                .map_or_else(|| s.label.replace('_', " "), |(_, t)| t.to_string());
            Panel {
                title,
                x_label: "seconds".into(),
                series: vec![s],
            }
        })
        .collect();
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir)?;
    draw_panels(&dir.join("campaign"), "campaign", &panels)
}

/// The bitmap backend draws text with a TrueType font of the system (Debian: fonts-dejavu-core).
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            const FONTS: [&str; 2] = [
                "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            ];
            let bytes = FONTS
                .iter()
                .find_map(|f| std::fs::read(f).ok())
                .ok_or_else(|| format!("no font among {FONTS:?} (install fonts-dejavu-core)"))?;
            plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()))
                .map_err(|_| "DejaVuSans.ttf is not a usable font".to_string())
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

/// Draws `panels` as a grid into `stem.png` and `stem.svg`.
pub fn draw_panels(stem: &Path, title: &str, panels: &[Panel]) -> Result<Vec<PathBuf>> {
    let columns = if panels.len() > 4 { 3 } else { panels.len().clamp(1, 2) };
    let rows = panels.len().div_ceil(columns).max(1);
    let size = (560 * columns as u32, 360 * rows as u32 + 40);
    register_font()?;
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    panels_on(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        panels,
        columns,
    )?;
    panels_on(SVGBackend::new(&svg, size).into_drawing_area(), title, panels, columns)?;
    Ok(vec![png, svg])
}

fn failed<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e:?}")
}

fn panels_on<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
    columns: usize,
) -> Result<()> {
    root.fill(&WHITE).map_err(failed)?;
    let root = root.titled(title, ("sans-serif", 26)).map_err(failed)?;
    let rows = panels.len().div_ceil(columns).max(1);
    for (area, panel) in root.split_evenly((rows, columns)).iter().zip(panels) {
        let points = panel.series.iter().flat_map(|s| s.points.iter());
        let (x_max, y_max) = points.fold((1e-9f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
        // A statistic that stayed at zero (no finding yet) gets a readable axis.
        let y_max = if y_max > 0.0 { y_max } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max * 1.05)
            .map_err(failed)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_label.as_str())
            .x_labels(6)
            .y_labels(6)
            .draw()
            .map_err(failed)?;
        for (index, series) in panel.series.iter().enumerate() {
            let color = Palette99::pick(index).to_rgba();
            chart
                .draw_series(LineSeries::new(series.points.iter().copied(), color.stroke_width(2)))
                .map_err(failed)?
                .label(series.label.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        if panel.series.len() > 1 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(failed)?;
        }
    }
    root.present().map_err(failed)
}

/// Draws grouped bars: one group per category, one bar per series (same order as `series`),
/// into `stem.png` and `stem.svg`.
pub fn draw_bars(
    stem: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<Vec<PathBuf>> {
    register_font()?;
    let size = ((160 * categories.len() as u32).max(640), 420);
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    bars_on(
        BitMapBackend::new(&png, size).into_drawing_area(),
        title,
        y_label,
        categories,
        series,
    )?;
    bars_on(
        SVGBackend::new(&svg, size).into_drawing_area(),
        title,
        y_label,
        categories,
        series,
    )?;
    Ok(vec![png, svg])
}

fn bars_on<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    root.fill(&WHITE).map_err(failed)?;
    let y_max = series
        .iter()
        .flat_map(|(_, v)| v.iter())
        .fold(1e-9f64, |m, v| m.max(*v));
    let bars = series.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..categories.len() as f64, 0.0..y_max * 1.1)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .x_labels(categories.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let index = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-6 {
                categories.get(index).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(failed)?;
    for (index, (label, values)) in series.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        let width = 0.8 / bars;
        chart
            .draw_series(values.iter().enumerate().map(|(category, value)| {
                let left = category as f64 + 0.1 + width * index as f64;
                Rectangle::new([(left, 0.0), (left + width, *value)], color.filled())
            }))
            .map_err(failed)?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(failed)?;
    root.present().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_campaign_continues_the_time_axis() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.json");
        let lines = [
            r#"{"run_time":0,"clients":1,"corpus":1,"acceptance":{"Percent":0.5}}"#,
            r#"{"run_time":5,"clients":1,"corpus":3,"edges_covered":{"Number":40}}"#,
            r#"{"run_time":10,"clients":1,"corpus":4}"#,
            r#"{"run_time":2,"clients":1,"corpus":4}"#,
            r#"{"run_time":7,"clients":1,"corpus":6}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let series = read_stats(&path).unwrap();
        let get = |name: &str| series.iter().find(|s| s.label == name).unwrap().points.clone();
        let corpus = get("corpus");
        assert_eq!(
            corpus.iter().map(|p| p.0).collect::<Vec<_>>(),
            [0.0, 5.0, 10.0, 12.0, 17.0]
        );
        assert_eq!(get("acceptance"), [(0.0, 50.0)]);
        assert_eq!(get("edges_covered"), [(5.0, 40.0)]);
        assert!(series.iter().all(|s| s.label != "clients" && s.label != "run_time"));
    }
}
