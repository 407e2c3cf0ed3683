//! `kube-wasm-bench-render [REPORT.json] [--soak-report SOAK.json]`: writes a report again —
//! `report.md`, the plots and `report.json` beside the given file — from the measurements an
//! earlier run left in it, with this driver's goals, figures and layout. Without a report
//! argument, the book's (`docs/src/benchmarks/report.json`, from the repository's root):
//! `scripts/bench.sh --render`. With `--soak-report`, the chaos soak's `report.json` (from
//! `scripts/soak.sh`, a run of its own) replaces the soak's figures in it. Without the report
//! (no run has written there yet), the page that says so.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube_wasm_bench::report::{BOOK_DIR, Report};
use kube_wasm_bench::soak::report::Summary;

fn main() -> anyhow::Result<()> {
    let mut json = Path::new(BOOK_DIR).join("report.json");
    let mut soak = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--soak-report" {
            let path = PathBuf::from(args.next().context("--soak-report needs a path")?);
            soak = Some(Summary::read(&path)?);
        } else {
            json = PathBuf::from(arg);
        }
    }
    let dir = json.parent().unwrap_or(Path::new("."));
    if !json.exists() {
        // No run has written there yet: the page that says so.
        let page = dir.join("report.md");
        std::fs::write(&page, Report::no_run_page())?;
        eprintln!("bench: no {}; wrote {}", json.display(), page.display());
        return Ok(());
    }
    let mut report = Report::read(&json)?;
    if soak.is_some() {
        let mut measured = report.measured;
        measured.soak = soak;
        report = Report::new(measured);
    }
    for file in report.write(dir)? {
        eprintln!("bench: wrote {}", file.display());
    }
    Ok(())
}
