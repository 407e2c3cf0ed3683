# The steps scripts/test.sh and scripts/compat.sh share: building every program the end-to-end
# and parity suites run (natively and for wasm32-wasip1), starting the infrastructure they run
# against (a control plane and an OCI registry on loopback, the KUBE_WASM_* variables the test
# kit reads), and running the suites. Source it from the repository root.

# The programs the end-to-end and parity tests run as wasm32-wasip1 modules (the examples,
# the e2e guests, the parity scenarios, kube-rs's examples ported in compat-tests/ported — cargo
# examples there, hence `--examples`), and the API-surface programs and the benchmark's ring
# controller, which only need to build here (scripts/bench.sh runs the benchmark). One wasm32
# invocation for all of them, so kube-wasm is built once with one feature set.
SUITE_PROGRAMS=(
  -p configmap-mirror -p configmap-generator -p finalizer-controller -p store-reader
  -p multi-watch -p api-checks -p hostile -p remote-command
  -p parity-scenarios -p kube-surface -p ring-controller
  -p ported-pod-watcher -p ported-secret-syncer -p ported-crd-derive
)

# Builds the host shim and every program natively (with `--workspace`: the features cargo
# resolves for the workspace's tests, so nothing is built twice) and the programs for
# wasm32-wasip1, then the ported workspace of compat-tests (not a member: a user's workspace
# with its own resolver and Cargo.lock, built into this target folder, where its programs are
# found like the others'; dependencies with the same features are shared).
build_suite_programs() {
  cargo build --workspace --bins
  cargo build --target wasm32-wasip1 --bins --examples "${SUITE_PROGRAMS[@]}"
  (
    cd compat-tests/ported-workspace
    export CARGO_TARGET_DIR="$OLDPWD/target"
    cargo build --locked --examples
    cargo build --locked --target wasm32-wasip1 --examples
  )
}

# start_suite_infra [--version V]: starts a control plane (of Kubernetes V, else the newest
# pinned) and an OCI registry in fresh temporary folders, stopped when the shell exits, and
# exports what the test kit reads (KUBE_WASM_*), KUBECONFIG and the control plane's env
# (KUBE_VERSION among them), with kubectl of the server's version first on PATH.
start_suite_infra() {
  local cp_args=("$@")
  suite_cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-cp.XXXXXX")
  suite_registry_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-registry.XXXXXX")
  trap 'stop_suite_infra' EXIT
  scripts/control-plane.sh "${cp_args[@]}" start "$suite_cp_dir" >/dev/null
  scripts/registry.sh start "$suite_registry_dir" >/dev/null
  set -a
  # shellcheck disable=SC1091
  . "$suite_cp_dir/env"
  set +a
  export PATH="$CONTROL_PLANE_BIN:$PATH"
  echo "control plane: kube-apiserver $KUBE_VERSION" >&2
  export KUBE_WASM_AUDIT_LOG="$AUDIT_LOG"
  export KUBE_WASM_CONTROL_PLANE_DIR="$suite_cp_dir"
  export KUBE_WASM_HOST_SHIM="$PWD/target/debug/host-shim"
  export KUBE_WASM_MODULES="$PWD/target/wasm32-wasip1/debug"
  export KUBE_WASM_NATIVE_BIN="$PWD/target/debug"
  KUBE_WASM_REGISTRY=$(sed -n 's/^REGISTRY=//p' "$suite_registry_dir/env")
  export KUBE_WASM_REGISTRY KUBE_WASM_REGISTRY_DIR="$suite_registry_dir"
}

# Stops what start_suite_infra started (idempotent).
stop_suite_infra() {
  [[ -n ${suite_cp_dir:-} ]] && { scripts/control-plane.sh stop "$suite_cp_dir" || true; }
  [[ -n ${suite_registry_dir:-} ]] && { scripts/registry.sh stop "$suite_registry_dir" || true; }
  return 0
}

# The end-to-end suite: wasm modules in the host shim against the real apiserver. The test
# targets are selected within the whole workspace (not `-p kube-wasm-e2e`): cargo resolves
# features per invocation, so this reuses everything built before instead of building kube a
# second time with the e2e crate's features alone. Extra arguments go to cargo test.
run_e2e_suite() {
  local e2e_tests=() test
  for test in e2e/tests/*.rs; do e2e_tests+=(--test "$(basename "$test" .rs)"); done
  cargo test --workspace "${e2e_tests[@]}" "$@"
}

# The behavioural parity suite: each scenario controller, native (kube 5.0) against wasm
# (kube-wasm). Run after the e2e tests: the restart scenarios restart the control plane.
# Selected within the whole workspace like the e2e tests; the harness's own tests are a test
# target (parity_harness) for the same reason. Extra arguments go to cargo test.
run_parity_suite() {
  cargo test --workspace --test parity_harness --test parity_scenarios --test parity_restart "$@"
}
