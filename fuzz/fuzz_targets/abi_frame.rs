//! Fuzz target `abi_frame`: see `kube_wasm_fuzz::checks::abi_frame`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kube_wasm_fuzz::checks::abi_frame::run(data));
