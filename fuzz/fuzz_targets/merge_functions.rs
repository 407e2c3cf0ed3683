//! Fuzz target `merge_functions`: see `kube_wasm_fuzz::checks::merge_functions`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kube_wasm_fuzz::checks::merge_functions::run(data));
