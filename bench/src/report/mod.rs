//! The report: figures per variant and N (median and p99 over runs), wasm/native ratios
//! computed pair by pair (run r of a wasm variant against run r of native), the goals
//! with whether each holds, written as `report.md`, `report.json` and PNG plots.
//!
//! One concept a file: [`measured`] (what the driver measured, the report's input),
//! [`figures`] (the figures per variant and N, and against native), [`goals`] (the issue's
//! goals and whether each holds), [`document`] (the whole report, `report.json`), [`format`]
//! (figures as text), [`markdown`] and [`plots`] (the two renderings), [`replicas`] (the
//! replicas workload's goals and section), [`cold_start`] (the cold start's goal and section), [`levers`] (each lever
//! before/after), [`mixed`] (the fleets of distinct controllers). This file writes them.

mod cold_start;
mod document;
mod figures;
mod format;
mod go;
mod goals;
mod levers;
mod markdown;
mod measured;
mod mixed;
mod plots;
mod replicas;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use document::Report;
pub use go::markdown as go_markdown;
pub use goals::Goal;
pub use measured::{Measured, Unavailable};

impl Report {
    /// Writes `report.md`, `report.json` and the plots into `dir`; returns the files.
    ///
    /// # Errors
    /// If a file cannot be written or a plot drawn.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        let json = dir.join("report.json");
        std::fs::write(&json, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", json.display()))?;
        files.push(json);
        let plots = self.plots(dir)?;
        let md = dir.join("report.md");
        std::fs::write(&md, self.markdown(&plots))
            .with_context(|| format!("writing {}", md.display()))?;
        files.push(md);
        files.extend(plots);
        Ok(files)
    }
}
