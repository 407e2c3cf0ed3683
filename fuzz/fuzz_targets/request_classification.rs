//! Fuzz target `request_classification`: see `kube_wasm_fuzz::checks::request_classification`.
#![no_main]

libfuzzer_sys::fuzz_target!(
    |data: &[u8]| kube_wasm_fuzz::checks::request_classification::run(data)
);
