//! Fuzz target `watch_event`: see `kube_wasm_fuzz::checks::watch_event`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kube_wasm_fuzz::checks::watch_event::run(data));
