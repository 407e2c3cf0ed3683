//! The PNG plots of `report.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::document::Report;
use super::figures::{Cell, MIB, MIB_BYTES};

use crate::stats;
use crate::workloads::ResumePoint;

impl Report {
    /// The plots' file names, in the order [`Self::plots`] draws them.
    pub(super) fn plot_names(&self) -> Vec<&'static str> {
        let mut names = vec![
            "memory_idle.png",
            "memory_load.png",
            "latency_reconcile.png",
            "latency_ring.png",
        ];
        if !self.measured.resume.is_empty() {
            names.push("resume_curve.png");
        }
        if !self.measured.budgets.is_empty() {
            names.push("memory_budget.png");
        }
        names
    }

    pub(super) fn plots(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| anyhow::anyhow!("registering the plot font"))?;
        let mut files = Vec::new();
        let series = |f: &dyn Fn(&Cell) -> Option<f64>| -> Vec<Line> {
            self.measured
                .variants
                .iter()
                .map(|&v| {
                    let points = self
                        .measured
                        .ns
                        .iter()
                        .filter_map(|&n| Some((n as f64, f(self.figures.cell(v, n)?)?)))
                        .collect();
                    (v.label().to_string(), points)
                })
                .collect()
        };
        let charts: [(&str, &str, &str, Vec<Line>); 4] = [
            (
                "memory_idle.png",
                "Idle fleet: PSS of all processes",
                "MiB",
                series(&|c| Some(c.idle_pss_kib.as_ref()?.median / MIB)),
            ),
            (
                "memory_load.png",
                "Under load: PSS during the ring cycles",
                "MiB",
                series(&|c| Some(c.load_pss_kib.as_ref()?.median / MIB)),
            ),
            (
                "latency_reconcile.png",
                "Event→reconcile latency, p50 (solid) and p99 (dashed)",
                "ms",
                Vec::new(),
            ),
            (
                "latency_ring.png",
                "Ring latency p50",
                "ms",
                series(&|c| Some(c.ring_p50_ms.as_ref()?.median)),
            ),
        ];
        for (file, title, unit, mut lines) in charts {
            let mut dashed = Vec::new();
            if lines.is_empty() {
                lines = series(&|c| Some(c.reconcile_p50_ms.as_ref()?.median));
                dashed = series(&|c| Some(c.reconcile_p99_ms.as_ref()?.median));
            }
            let path = dir.join(file);
            line_chart(&path, title, "N (controllers)", unit, &lines, &dashed)
                .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
            files.push(path);
        }
        if !self.measured.resume.is_empty() {
            let curve = |f: &dyn Fn(&ResumePoint) -> Option<f64>| -> Vec<(f64, f64)> {
                self.measured
                    .resume
                    .iter()
                    .filter_map(|p| Some((p.linear_memory_bytes as f64 / MIB_BYTES, f(p)?)))
                    .collect()
            };
            let lines = vec![
                (
                    "resume p50".to_string(),
                    curve(&|p| stats::median(&p.resume_ms)),
                ),
                (
                    "suspend p50".to_string(),
                    curve(&|p| stats::median(&p.suspend_ms)),
                ),
            ];
            let path = dir.join("resume_curve.png");
            line_chart(
                &path,
                "Suspend to / resume from disk vs linear memory",
                "linear memory (MiB)",
                "ms",
                &lines,
                &[],
            )
            .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
            files.push(path);
        }
        if !self.measured.budgets.is_empty() {
            let path = dir.join("memory_budget.png");
            line_chart(
                &path,
                "Memory budget: smallest cgroup limit the ring runs in",
                "N (controllers)",
                "MiB",
                &super::budget::series(&self.measured),
                &[],
            )
            .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
            files.push(path);
        }
        Ok(files)
    }
}

/// One plotted line: its label and its (x, value) points (x: N, or MiB for the resume curve).
type Line = (String, Vec<(f64, f64)>);

const COLOURS: [RGBColor; 4] = [
    RGBColor(200, 30, 30),
    RGBColor(30, 90, 200),
    RGBColor(20, 150, 60),
    RGBColor(150, 60, 170),
];

fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    unit: &str,
    lines: &[Line],
    dashed: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<(f64, f64)> = lines
        .iter()
        .chain(dashed)
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    let xs: BTreeSet<u64> = all.iter().map(|p| p.0 as u64).collect();
    let x_max = xs.iter().copied().max().unwrap_or(1).max(1) as f64;
    let y_max = all.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max * 1.05, 0f64..y_max)?;
    chart.configure_mesh().x_desc(x_desc).y_desc(unit).draw()?;
    for (i, (label, points)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
    }
    for (i, (_, points)) in dashed.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart.draw_series(DashedLineSeries::new(
            points.iter().copied(),
            6,
            4,
            colour.stroke_width(1),
        ))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
