//! The report: figures per variant and N (median and p99 over runs), wasm/native ratios
//! computed pair by pair (run r of a wasm variant against run r of native), the goals
//! with whether each holds, written as `report.md`, `report.json` and PNG plots.
//!
//! One concept a file: [`measured`] (what the driver measured, the report's input),
//! [`figures`] (the figures per variant and N, and against native), [`goals`] (the issue's
//! goals and whether each holds), [`document`] (the whole report, `report.json`), [`format`]
//! (figures as text), [`markdown`] and [`plots`] (the two renderings), [`replicas`] (the
//! replicas workload's goals and section), [`cold_start`] (the cold start's goal and section), [`levers`] (each lever
//! before/after), [`mixed`] (the fleets of distinct controllers), [`budget`] (memory budgets and idle CPU), [`scale`] (how the ring grows with N), [`suspended_scale`] (suspended modules by the thousand), [`soak`] (the chaos soak's verdict), [`merge`] (one report of a run's parts). This
//! file writes them.

mod budget;
mod cold_start;
mod document;
mod figures;
mod format;
mod go;
mod goals;
mod levers;
mod markdown;
mod measured;
mod merge;
mod mixed;
mod plots;
mod replicas;
mod scale;
mod soak;
mod suspended_scale;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use document::Report;
pub use go::markdown as go_markdown;
pub use goals::Goal;
pub use measured::{Measured, Unavailable};
pub use merge::{Part, merge};

/// Where the book keeps the last run's report (`report.md`, `report.json`, the plots),
/// relative to the repository's root.
pub const BOOK_DIR: &str = "docs/src/benchmarks";

impl Report {
    /// Writes `report.md`, `report.json` and the plots into `dir`; returns the files.
    ///
    /// # Errors
    /// If a file cannot be written or a plot drawn.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        let json = dir.join("report.json");
        std::fs::write(&json, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("writing {}", json.display()))?;
        files.push(json);
        let plots = self.plots(dir)?;
        debug_assert!(
            plots.iter().map(|p| p.file_name()).eq(self
                .plot_names()
                .iter()
                .map(|n| Some(std::ffi::OsStr::new(n))))
        );
        let md = dir.join("report.md");
        std::fs::write(&md, self.page()).with_context(|| format!("writing {}", md.display()))?;
        files.push(md);
        files.extend(plots);
        Ok(files)
    }

    /// The report from the measurements of a `report.json` an earlier run wrote: what that
    /// run's report says, with this driver's goals, figures and layout.
    ///
    /// # Errors
    /// If the file cannot be read, or holds no measurements of this driver's shape.
    pub fn read(json: &Path) -> anyhow::Result<Self> {
        #[derive(serde::Deserialize)]
        struct Written {
            measured: Measured,
        }
        let text =
            std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
        let written: Written = serde_json::from_str(&text)
            .with_context(|| format!("the measurements in {}", json.display()))?;
        Ok(Self::new(written.measured))
    }

    /// `report.md`: the page, its plots named as [`Self::write`] draws them beside it.
    pub fn page(&self) -> String {
        self.markdown(&self.plot_names())
    }

    /// The book's `report.md` while no run has written its report there (no `report.json`
    /// beside it), with the goals anchor the book's "What a module costs" includes.
    pub fn no_run_page() -> String {
        "# kube-wasm benchmark: wasm controllers vs native kube-rs 5.0\n\n\
         No run of the benchmark has written its report into this book yet. `scripts/bench.sh` \
         writes it here — this page, `report.json` with every measurement, and the plots — to be \
         committed with the change it measures.\n\n## Goals\n\n<!-- ANCHOR: goals -->\n\
         *No run has written its goals here yet; the last full run's are below.*\n\
         <!-- ANCHOR_END: goals -->\n"
            .to_owned()
    }

    /// What the book's `report.md` must be: the page its `report.json` renders to, or
    /// [`Self::no_run_page`] without one.
    ///
    /// # Errors
    /// If `report.json` is there but cannot be read.
    pub fn book_page(dir: &Path) -> anyhow::Result<String> {
        let json = dir.join("report.json");
        if json.exists() {
            Ok(Self::read(&json)?.page())
        } else {
            Ok(Self::no_run_page())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's report page is what its committed measurements render to, so the page and
    /// `report.json` cannot drift apart, and a change of the report's layout shows in the book
    /// once `scripts/bench.sh --render` has written the page again. Before any run wrote
    /// there, it is the page that says so.
    #[test]
    fn the_books_report_is_rendered_from_its_measurements() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(BOOK_DIR);
        let committed = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
        let page = Report::book_page(&dir).expect("the book's report.json");
        assert!(
            committed == page,
            "{BOOK_DIR}/report.md is not what report.json renders to: run `scripts/bench.sh --render`"
        );
        if dir.join("report.json").exists() {
            let report = Report::read(&dir.join("report.json")).expect("read");
            for plot in report.plot_names() {
                assert!(dir.join(plot).is_file(), "{BOOK_DIR}/{plot} is missing");
            }
        }
    }

    /// Whether the report in `dir` is the merge of the parts in `dir/parts` (its soak aside:
    /// `--merge --soak-report` hands one in over a part's); `Ok` without parts.
    fn is_the_merge_of_its_parts(dir: &Path) -> Result<(), String> {
        let Ok(entries) = std::fs::read_dir(dir.join("parts")) else {
            return Ok(());
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Ok(());
        }
        let parts = paths
            .iter()
            .map(|path| Part::read(path))
            .collect::<anyhow::Result<Vec<_>>>()
            .map_err(|e| format!("{e:#}"))?;
        let mut merged = merge(parts).map_err(|e| format!("{e:#}"))?;
        let book = Report::read(&dir.join("report.json"))
            .map_err(|e| format!("{e:#}"))?
            .measured;
        merged.soak = book.soak.clone();
        let value = |m: &Measured| serde_json::to_value(m).unwrap_or_default();
        (value(&merged) == value(&book))
            .then_some(())
            .ok_or_else(|| "report.json is not the merge of parts/: run `scripts/bench.sh --merge`, or remove parts/ after a whole run".to_owned())
    }

    /// A report merged from parts stays their merge: a part run again and not merged, or
    /// parts left behind by a whole run, show here.
    #[test]
    fn the_books_report_is_the_merge_of_its_parts_when_it_has_them() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(BOOK_DIR);
        if let Err(why) = is_the_merge_of_its_parts(&dir) {
            panic!("{BOOK_DIR}: {why}");
        }

        let dir = std::env::temp_dir().join(format!("kube-wasm-parts-{}", std::process::id()));
        let part = |date: &str| Measured {
            context: vec![("date".into(), date.into())],
            ..Measured::default()
        };
        Report::new(part("one"))
            .write(&dir.join("parts").join("ring"))
            .expect("part");
        std::fs::rename(
            dir.join("parts/ring/report.json"),
            dir.join("parts/ring.json"),
        )
        .expect("moved");
        let merged = merge(vec![Part {
            name: "ring".into(),
            measured: part("one"),
        }])
        .expect("merged");
        Report::new(merged).write(&dir).expect("the report");
        assert_eq!(is_the_merge_of_its_parts(&dir), Ok(()));
        Report::new(part("two"))
            .write(&dir)
            .expect("another report");
        assert!(is_the_merge_of_its_parts(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_written_report_reads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("kube-wasm-report-{}", std::process::id()));
        let report = Report::new(Measured::default());
        report.write(&dir).expect("written");
        let read = Report::read(&dir.join("report.json")).expect("read back");
        assert_eq!(read.page(), report.page());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
