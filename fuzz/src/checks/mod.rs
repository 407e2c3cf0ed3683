//! One module per fuzz target; `run(data)` panics when an invariant breaks. Shared, by
//! `#[path]`, with host-shim's test `fuzz_regressions`.

pub mod abi_frame;
pub mod import_headers;
pub mod manifest;
pub mod merge_functions;
pub mod request_classification;
pub mod watch_event;

/// Runs the check of the fuzz target named `target` on `data`.
///
/// # Panics
/// If `target` names no target, or an invariant of the target breaks.
pub fn run(target: &str, data: &[u8]) {
    match target {
        "abi_frame" => abi_frame::run(data),
        "import_headers" => import_headers::run(data),
        "manifest" => manifest::run(data),
        "merge_functions" => merge_functions::run(data),
        "request_classification" => request_classification::run(data),
        "watch_event" => watch_event::run(data),
        other => panic!("no fuzz target {other:?}"),
    }
}

/// The fuzz targets, as `scripts/fuzz.sh` and the regression test know them.
pub const TARGETS: [&str; 6] = [
    "abi_frame",
    "import_headers",
    "manifest",
    "merge_functions",
    "request_classification",
    "watch_event",
];
