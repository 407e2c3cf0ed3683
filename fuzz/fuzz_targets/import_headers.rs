//! Fuzz target `import_headers`: see `kube_wasm_fuzz::checks::import_headers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kube_wasm_fuzz::checks::import_headers::run(data));
