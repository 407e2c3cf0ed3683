//! `kube-wasm-bench-render [REPORT.json] [--soak-report SOAK.json]`: writes a report again —
//! `report.md`, the plots and `report.json` beside the given file — from the measurements an
//! earlier run left in it, with this driver's goals, figures and layout. Without a report
//! argument, the book's (`docs/src/benchmarks/report.json`, from the repository's root):
//! `scripts/bench.sh --render`. With `--soak-report`, the chaos soak's `report.json` (from
//! `scripts/soak.sh`, a run of its own) replaces the soak's figures in it. Without the report
//! (no run has written there yet), the page that says so.
//!
//! `kube-wasm-bench-render --parts PART.json… [--out DIR] [--soak-report SOAK.json]`: one
//! report of a run's parts (`scripts/bench.sh --part`, each a stage of the whole run; see
//! `kube_wasm_bench::report::merge` for what may come from which part), each part named after
//! its file's stem, written into DIR (default: the book's folder): `scripts/bench.sh --merge`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube_wasm_bench::report::{BOOK_DIR, Part, Report, merge};
use kube_wasm_bench::soak::report::Summary;

fn main() -> anyhow::Result<()> {
    let mut json = Path::new(BOOK_DIR).join("report.json");
    let mut soak = None;
    let mut parts: Option<Vec<PathBuf>> = None;
    let mut out = PathBuf::from(BOOK_DIR);
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--soak-report" {
            let path = PathBuf::from(args.next().context("--soak-report needs a path")?);
            soak = Some(Summary::read(&path)?);
        } else if arg == "--out" {
            out = PathBuf::from(args.next().context("--out needs a folder")?);
        } else if arg == "--parts" {
            parts = Some(Vec::new());
        } else if let Some(parts) = parts.as_mut() {
            parts.push(PathBuf::from(arg));
        } else {
            json = PathBuf::from(arg);
        }
    }
    if let Some(paths) = parts {
        let read = paths
            .iter()
            .map(|path| Part::read(path))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut measured = merge(read)?;
        if soak.is_some() {
            measured.soak = soak;
        }
        for file in Report::new(measured).write(&out)? {
            eprintln!("bench: wrote {}", file.display());
        }
        return Ok(());
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
