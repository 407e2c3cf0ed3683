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

# The host's image the suites run on the one-node cluster (scripts/image.sh build): a release
# build of host-shim for x86_64-unknown-linux-musl in a target folder of its own, so that it
# never waits for the lock of a build in the foreground.
SUITE_IMAGE_LAYOUT=target/image/oci

# Builds what the suites run against, each cached after its first build: the control plane
# (of KUBE_WASM_KUBE_VERSION, else the newest pinned; kube-apiserver, kubectl and etcd from
# their Go module sources, about 4 minutes on 2 idle cores), the OCI registry, the node's parts
# (kube-controller-manager, kube-scheduler and kubelet from the same module, Debian's
# containerd and runc, the sandbox image; about 3 minutes more) and the host's image (about 8
# minutes cold on 2 idle cores).
# Each part prints its wall and CPU seconds; the first that fails ends it with its status (also
# where the caller's `set -e` does not apply, as in `provision_suite_infra && …`).
provision_suite_infra() {
  timed "control plane" scripts/control-plane.sh provision || return
  timed registry scripts/registry.sh provision || return
  timed "the node's parts" scripts/cluster.sh provision || return
  timed "the host's image" env CARGO_TARGET_DIR=target/image scripts/image.sh build "$SUITE_IMAGE_LAYOUT"
}

# timed WHAT COMMAND…: runs COMMAND, then prints "WHAT: N s wall, U s user + S s system CPU".
timed() {
  local TIMEFORMAT="$1: %0R s wall, %0U s user + %0S s system CPU"
  shift
  time "$@"
}

# prune_build_caches provision|go: on CI (CI=true), where a clone is built once, deletes the
# build caches of what is already built — the control plane's and node's Go build cache and
# the image's target folder (its OCI layout stays), or the Go programs' build cache — so that
# the Rust builds after them have the disk (a CI run failed with no space left on the device).
# A warm machine keeps them: they make a rebuild after a pin or source change quick.
prune_build_caches() {
  [[ ${CI:-} == true ]] || return 0
  local cache=${KUBE_WASM_CACHE:-$HOME/.cache/kube-wasm} before
  before=$(df --output=avail -B1M . | tail -n 1)
  case $1 in
    provision)
      rm -rf "$cache/control-plane/go-build"
      find target/image -mindepth 1 -maxdepth 1 ! -path "$SUITE_IMAGE_LAYOUT" -exec rm -rf {} +
      ;;
    go) rm -rf "${GOCACHE_KUBE_WASM:-$cache/go-build}" ;;
    *) echo "prune_build_caches: provision or go, not $1" >&2; return 2 ;;
  esac
  echo "CI: pruned the $1 build caches, $(($(df --output=avail -B1M . | tail -n 1) - before)) MiB freed" >&2
}

# start_suite_infra [VERSION]: starts a control plane (of Kubernetes VERSION, else
# KUBE_WASM_KUBE_VERSION, else the newest pinned), an OCI registry holding the host's image
# (KUBE_WASM_HOST_IMAGE, by digest) and a one-node cluster of the same version pulling from it
# (its own control plane, so the other tests never meet its controllers), each in a fresh
# temporary folder, stopped when the shell exits; exports what the test kit reads
# (KUBE_WASM_*), KUBECONFIG and the control plane's env (KUBE_VERSION among them), with kubectl
# of the server's version first on PATH.
start_suite_infra() {
  local started
  if [[ -n ${1:-} ]]; then export KUBE_WASM_KUBE_VERSION=$1; fi
  suite_cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-cp.XXXXXX")
  suite_registry_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-registry.XXXXXX")
  suite_cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-cluster.XXXXXX")
  trap 'stop_suite_infra' EXIT
  scripts/control-plane.sh start "$suite_cp_dir" >/dev/null
  scripts/registry.sh start "$suite_registry_dir" >/dev/null
  KUBE_WASM_REGISTRY=$(sed -n 's/^REGISTRY=//p' "$suite_registry_dir/env")
  KUBE_WASM_HOST_IMAGE=$(scripts/image.sh push --insecure "$SUITE_IMAGE_LAYOUT" \
    "$KUBE_WASM_REGISTRY/kube-wasm/host-shim:test")
  export KUBE_WASM_HOST_IMAGE KUBE_WASM_HOST_IMAGE_LAYOUT="$PWD/$SUITE_IMAGE_LAYOUT"
  started=$SECONDS
  scripts/cluster.sh start --registry "$KUBE_WASM_REGISTRY" "$suite_cluster_dir" >/dev/null
  echo "one-node cluster ready in $((SECONDS - started))s; host image $KUBE_WASM_HOST_IMAGE" >&2
  export KUBE_WASM_CLUSTER_DIR="$suite_cluster_dir"
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
  export KUBE_WASM_REGISTRY KUBE_WASM_REGISTRY_DIR="$suite_registry_dir"
}

# Stops what start_suite_infra started (idempotent).
stop_suite_infra() {
  [[ -n ${suite_cluster_dir:-} ]] && { scripts/cluster.sh stop "$suite_cluster_dir" || true; }
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
