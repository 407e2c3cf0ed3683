#!/usr/bin/env bash
# Runs every test of the project on a fresh machine or a warm one:
#   format and lint checks (host and wasm32-wasip1), unit tests (native, fake host), a short
#   run of every fuzz target (scripts/fuzz.sh),
#   the example and end-to-end guests built for wasm32-wasip1, and the end-to-end tests:
#   wasm modules in the host shim against a real kube-apiserver + etcd started here, and the
#   host's image (scripts/image.sh) run by a one-node cluster with a kubelet (scripts/cluster.sh).
# Installs what it needs (the wasm32-wasip1 target, Debian packages, the control plane,
# cached under ~/.cache/kube-wasm after the first run).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it started (minutes:seconds since this script began), so a CI log shows
# where a run's time went.
step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# CI builds a fresh clone once: incremental compilation data would never be reused there, and
# took 1.9 of the 5.6 GB target folder after the unit tests (a CI run failed on a full disk).
if [[ ${CI:-} == true ]]; then export CARGO_INCREMENTAL=0; fi

step "toolchain: wasm32-wasip1 target, rustfmt, clippy"
rustup target add wasm32-wasip1
rustup component add rustfmt clippy
# OpenSSL's headers: the API-surface list documents kube 5.0 with every feature, openssl-tls too.
if ! dpkg -s libssl-dev pkg-config >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev pkg-config
fi

step "control plane, node, OCI registry and the host's image: made in the background while the Rust steps run"
# kube-apiserver, kubectl and etcd are built from their Go module sources the first time
# (control-plane/; about 4 minutes on 2 idle cores, then cached); the Rust build leaves cores
# idle in its long single-crate stretches, and nothing before the end-to-end steps needs the
# control plane or the registry. Its own
# process group (setsid), so that a run ending early stops the whole provisioning; its log is
# printed when it is awaited. Then the node's parts (kube-controller-manager, kube-scheduler and
# kubelet from the same module, Debian's containerd and runc, the sandbox image; about 3
# minutes more cold) and the host's image (a release build of host-shim for
# x86_64-unknown-linux-musl in a target folder of its own, so that it never waits for the
# foreground's lock; about 8 minutes cold on 2 idle cores).
provision_log=$(mktemp "${TMPDIR:-/tmp}/kube-wasm-provision.XXXXXX")
setsid bash -c 'scripts/control-plane.sh provision && scripts/registry.sh provision \
  && scripts/cluster.sh provision \
  && CARGO_TARGET_DIR=target/image scripts/image.sh build target/image/oci' \
  >"$provision_log" 2>&1 &
provision_pid=$!
trap 'kill -- "-$provision_pid" 2>/dev/null || true' EXIT

step "format"
cargo fmt --all -- --check

step "build and unit tests (native, fake host)"
cargo test --workspace --exclude kube-wasm-e2e --exclude kube-wasm-parity

step "fuzz: every target of fuzz/ for 20 s (scripts/fuzz.sh; fails on any crash)"
scripts/fuzz.sh

step "lint: host and native builds"
cargo clippy --workspace --all-targets -- -D warnings

# The programs the end-to-end and parity tests run as wasm32-wasip1 modules (the examples,
# the e2e guests, the parity scenarios, kube-rs's examples ported in compat-tests/ported — cargo
# examples there, hence `--examples`), and the API-surface programs and the benchmark's ring
# controller, which only need to build here (scripts/bench.sh runs the
# benchmark). One wasm32 invocation for all of them, so kube-wasm is built once with one
# feature set.
programs=(
  -p configmap-mirror -p configmap-generator -p finalizer-controller -p store-reader
  -p multi-watch -p api-checks -p hostile -p remote-command
  -p parity-scenarios -p kube-surface -p ring-controller
  -p ported-pod-watcher -p ported-secret-syncer -p ported-crd-derive
)

step "build the host shim and every program natively, and the programs for wasm32-wasip1"
# Natively with `--workspace`: the features cargo resolved for the test step above, so
# nothing is built twice (that step built the ported cargo examples natively too).
cargo build --workspace --bins
cargo build --target wasm32-wasip1 --bins --examples "${programs[@]}"

step "a ported workspace of its own (shaped like kube-rs's): natively and for wasm32-wasip1"
# compat-tests/ported-workspace is not a member: it is a user's workspace (its resolver,
# inherited dependencies, its own Cargo.lock). Built into this target folder, where its
# programs are found like the others'; dependencies with the same features are shared.
(
  cd compat-tests/ported-workspace
  export CARGO_TARGET_DIR="$OLDPWD/target"
  cargo build --locked --examples
  cargo build --locked --target wasm32-wasip1 --examples
)

step "lint: wasm32-wasip1 guests"
cargo clippy --target wasm32-wasip1 \
  -p kube-wasm-guest -p kube-wasm-tokio -p kube-wasm-client -p kube-runtime-wasm -p kube-wasm \
  "${programs[@]}" -- -D warnings

step "publishable crates: cargo package"
# The crates meant for crates.io, packaged in one invocation (path dependencies resolved
# against each other's packages). Any warning (missing metadata) fails the step. No verify
# build: it would rebuild every dependency from scratch in target/package (13 s for
# kube-wasm-abi's three alone, minutes for the rest), the sources were just built, linted and
# tested above, and crates depending on k8s-openapi only build standalone with a Kubernetes
# version chosen (K8S_OPENAPI_ENABLED_VERSION), as for kube itself.
package_log=$(cargo package --no-verify --allow-dirty -p kube-wasm-abi -p kube-wasm-guest \
  -p kube-wasm-tokio-macros -p kube-wasm-tokio -p kube-wasm-client -p kube-runtime-wasm \
  -p kube-wasm 2>&1) || { printf '%s\n' "$package_log" >&2; exit 1; }
if grep -q '^warning' <<<"$package_log"; then printf '%s\n' "$package_log" >&2; exit 1; fi

step "end to end: wait for the provisioning, start a control plane, an OCI registry and a one-node cluster"
provisioned=0
wait "$provision_pid" || provisioned=$?
cat "$provision_log" >&2
rm -f "$provision_log"
if ((provisioned != 0)); then
  echo "provisioning the control plane, the node, the registry or the image failed (exit $provisioned)" >&2
  exit 1
fi
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-cp.XXXXXX")
registry_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-registry.XXXXXX")
cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-cluster.XXXXXX")
trap 'scripts/cluster.sh stop "$cluster_dir" || true; scripts/control-plane.sh stop "$cp_dir" || true
  scripts/registry.sh stop "$registry_dir" || true' EXIT
scripts/control-plane.sh start "$cp_dir" >/dev/null
scripts/registry.sh start "$registry_dir" >/dev/null
KUBE_WASM_REGISTRY=$(sed -n 's/^REGISTRY=//p' "$registry_dir/env")
# The host's image in the test registry, by digest; the cluster (its own control plane, so the
# other tests never meet its controllers) pulls it from there.
KUBE_WASM_HOST_IMAGE=$(scripts/image.sh push --insecure target/image/oci \
  "$KUBE_WASM_REGISTRY/kube-wasm/host-shim:test")
export KUBE_WASM_HOST_IMAGE KUBE_WASM_HOST_IMAGE_LAYOUT="$PWD/target/image/oci"
cluster_started=$SECONDS
scripts/cluster.sh start --registry "$KUBE_WASM_REGISTRY" "$cluster_dir" >/dev/null
echo "one-node cluster ready in $((SECONDS - cluster_started))s; host image $KUBE_WASM_HOST_IMAGE" >&2
export KUBE_WASM_CLUSTER_DIR="$cluster_dir"
set -a
# shellcheck disable=SC1091
. "$cp_dir/env"
set +a
# kubectl of the server's version, from the same sources (the WasmController tests use it).
export PATH="$CONTROL_PLANE_BIN:$PATH"
echo "control plane: kube-apiserver $KUBE_VERSION" >&2
export KUBE_WASM_AUDIT_LOG="$AUDIT_LOG"
export KUBE_WASM_CONTROL_PLANE_DIR="$cp_dir"
export KUBE_WASM_HOST_SHIM="$PWD/target/debug/host-shim"
export KUBE_WASM_MODULES="$PWD/target/wasm32-wasip1/debug"
export KUBE_WASM_NATIVE_BIN="$PWD/target/debug"
export KUBE_WASM_REGISTRY KUBE_WASM_REGISTRY_DIR="$registry_dir"

step "end to end: wasm modules in the host shim against the real apiserver"
# The e2e test targets selected within the whole workspace (not `-p kube-wasm-e2e`): cargo
# resolves features per invocation, so this reuses everything built above instead of building
# kube a second time with the e2e crate's features alone.
e2e_tests=()
for test in e2e/tests/*.rs; do e2e_tests+=(--test "$(basename "$test" .rs)"); done
cargo test --workspace "${e2e_tests[@]}"

step "behavioural parity: each scenario controller, native (kube 5.0) against wasm (kube-wasm)"
# Its own invocation after the e2e tests: the restart scenarios restart this control plane.
# Selected within the whole workspace like the e2e tests (no second kube build); the
# harness's own tests are a test target (parity_harness) for the same reason.
cargo test --workspace --test parity_harness --test parity_scenarios --test parity_restart

step "done"
