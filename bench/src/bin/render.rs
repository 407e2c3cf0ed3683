//! `kube-wasm-bench-render [REPORT.json]`: writes a report again — `report.md`, the plots and
//! `report.json` beside the given file — from the measurements an earlier run left in it, with
//! this driver's goals, figures and layout. Without an argument, the book's
//! (`docs/src/benchmarks/report.json`, from the repository's root): `scripts/bench.sh --render`.
//! Without that file (no run has written there yet), the page that says so.

use std::path::{Path, PathBuf};

use kube_wasm_bench::report::{BOOK_DIR, Report};

fn main() -> anyhow::Result<()> {
    let json = std::env::args_os()
        .nth(1)
        .map_or_else(|| Path::new(BOOK_DIR).join("report.json"), PathBuf::from);
    let dir = json.parent().unwrap_or(Path::new("."));
    if !json.exists() {
        // No run has written there yet: the page that says so.
        let page = dir.join("report.md");
        std::fs::write(&page, Report::no_run_page())?;
        eprintln!("bench: no {}; wrote {}", json.display(), page.display());
        return Ok(());
    }
    let report = Report::read(&json)?;
    for file in report.write(dir)? {
        eprintln!("bench: wrote {}", file.display());
    }
    Ok(())
}
