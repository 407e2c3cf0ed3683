#!/usr/bin/env bash
# RUSTC_WRAPPER for the fuzz build (scripts/fuzz.sh): cargo runs it as `rustc-wrapper.sh RUSTC
# ARGS…`. It adds libFuzzer's coverage instrumentation — rustc's stable SanitizerCoverage
# flags, as `cargo fuzz build -s none` passes them — to the crates under test only: the fuzz
# crate, the project's crates and the few parsers they call (listed below). Every other
# dependency (wasmtime, cranelift, kube's client, rustls, tokio, …) is built plain: the
# targets never run it, it only has to link, and instrumenting it would only make the build
# slower. Generic code of any crate is compiled, and so instrumented, in the crate that uses
# it (serde_json's deserializer for the ABI's headers, for one).
#
# Only what is built for the target (`--target` given: scripts/fuzz.sh always names it) is
# instrumented: a proc macro or build script using an instrumented serde_json would not load.
set -euo pipefail
rustc=$1
shift
crate=
target=
prev=
for arg in "$@"; do
  case "$prev" in
    --crate-name) crate=$arg ;;
    --target) target=$arg ;;
  esac
  prev=$arg
done
[[ -n $target ]] || crate=""

case "$crate" in
  kube_wasm_fuzz | abi_frame | import_headers | request_classification | watch_event | manifest | \
    merge_functions | host_shim | kube_wasm_abi | \
    http | percent_encoding | serde_json | serde_saphyr | granit_parser | kube_core | \
    wasmparser | wasm_encoder)
    exec "$rustc" "$@" \
      -Cpasses=sancov-module \
      -Cllvm-args=-sanitizer-coverage-level=4 \
      -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
      -Cllvm-args=-sanitizer-coverage-pc-table \
      -Cllvm-args=-sanitizer-coverage-trace-compares \
      --cfg fuzzing
    ;;
  *) exec "$rustc" "$@" ;;
esac
