//! Fuzz target `manifest`: see `kube_wasm_fuzz::checks::manifest`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kube_wasm_fuzz::checks::manifest::run(data));
