//! The fuzz targets' checks (`fuzz/src/checks/`, run by `scripts/fuzz.sh` under libFuzzer)
//! replayed by the normal `cargo test`: over every input a fuzzer once found failing
//! (`tests/data/fuzz-regressions/<target>/`, one file an input), so a bug fuzzing found stays
//! fixed; over the fuzz seeds (`fuzz/seeds/`); and over every request of
//! `tests/data/request_info.cases`.

#[path = "../../fuzz/src/checks/mod.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// Runs the check of `target` on every file of `dir`; returns how many ran and the failures
/// (file and panic message).
fn replay(target: &str, dir: &Path) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.expect("a directory entry").path())
            .collect(),
        Err(_) => return (0, failures),
    };
    files.sort();
    for file in &files {
        let data = std::fs::read(file).expect("readable input");
        if let Err(panic) = std::panic::catch_unwind(|| checks::run(target, &data)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!("{}: {message}", file.display()));
        }
    }
    (files.len(), failures)
}

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn inputs_fuzzing_found_failing_pass_now() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for target in checks::TARGETS {
        let (n, failed) = replay(target, &data("tests/data/fuzz-regressions").join(target));
        ran += n;
        failures.extend(failed);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 1, "no regression input found");
}

#[test]
fn the_fuzz_seeds_pass_every_check() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for (target, seeds) in [
        ("abi_frame", "frames"),
        ("import_headers", "frames"),
        ("manifest", "manifest"),
        ("merge_functions", "merge_functions"),
        ("request_classification", "request_classification"),
        ("watch_event", "watch_event"),
    ] {
        let (n, failed) = replay(target, &data("../fuzz/seeds").join(seeds));
        assert!(n > 0, "no seeds for {target}");
        ran += n;
        failures.extend(failed);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 10, "only {ran} seeds");
}

#[test]
fn every_classification_case_passes_the_classification_check() {
    let cases = include_str!("data/request_info.cases");
    let mut checked = 0;
    for line in cases
        .lines()
        .filter(|l| l.contains(" => ") && !l.starts_with('#'))
    {
        let (request, _) = line.split_once(" => ").expect("METHOD URI => EXPECTED");
        let input = request.replace("NS", "team-a");
        // With no rules, and with rules that allow it and more.
        checks::request_classification::run(input.as_bytes());
        let with_rules = format!("{input}\n*|*|*/status\nget,list,watch|,apps|pods,pods/log");
        checks::request_classification::run(with_rules.as_bytes());
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} cases");
}
