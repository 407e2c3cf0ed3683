//! The fuzz targets' checks: one module per target, each a `run(data)` that feeds `data` to
//! the host's own decoder or classifier and panics when an invariant breaks (a panic is what
//! libFuzzer reports as a crash). The binaries in `fuzz_targets/` only call them; host-shim's
//! test `fuzz_regressions` runs the same checks over the seeds (`fuzz/seeds/`) and over every
//! input a fuzzer once found failing (`host-shim/tests/data/fuzz-regressions/`), so a fixed
//! bug stays fixed under the normal `cargo test`.

pub mod checks;
