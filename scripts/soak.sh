#!/usr/bin/env bash
# The chaos soak (not part of the test command): many configmap-mirror modules under steady
# traffic in one host shim, beside hostile modules, while kube-apiserver and etcd are
# restarted, every connection to the API server is cut and the host is SIGKILLed and started
# again. Checks that every change was reconciled, the host's memory stayed bounded and no
# healthy module stalled; prints the report, writes it to target/soak/report.txt (SOAK_OUT to
# change the folder) and exits non-zero when a check fails.
#
#   scripts/soak.sh [--duration 10m] [--modules 20] [kube-wasm-soak options…]
#   scripts/soak.sh --help                                   (all options)
#
# Debug builds, the ones scripts/test.sh makes (nothing is built twice after a test run):
# dependencies — wasmtime and its compiler among them — are optimised in the dev profile, and
# our own crates keep their overflow checks and debug assertions, which a soak should trip if
# it can. The control plane is started here, in SOAK_CP_DIR (default: a fresh temporary
# folder), and stopped at the end. Cutting connections (`--chaos watches`) needs root or
# CAP_NET_ADMIN (ss -K).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

target=${CARGO_TARGET_DIR:-$PWD/target}
out=${SOAK_OUT:-$PWD/target/soak}

for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then
    cargo build --quiet --workspace --bins
    "$target/debug/kube-wasm-soak" --help
    exit 0
  fi
done

step "toolchain: wasm32-wasip1 target"
rustup target add wasm32-wasip1

step "control plane: build kube-apiserver, kubectl and etcd from their Go module sources (about 4 minutes the first time, then cached)"
scripts/control-plane.sh provision >/dev/null

# The same builds as scripts/test.sh (one feature resolution for each target), so after a test
# run this builds nothing.
programs=(
  -p configmap-mirror -p configmap-generator -p finalizer-controller -p store-reader
  -p multi-watch -p api-checks -p hostile -p remote-command
  -p parity-scenarios -p kube-surface -p ring-controller
)
step "debug builds: the host shim and the soak driver; the modules for wasm32-wasip1"
cargo build --workspace --bins
cargo build --target wasm32-wasip1 "${programs[@]}"

step "start a control plane"
cp_dir=${SOAK_CP_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-soak-cp.XXXXXX")}
trap 'scripts/control-plane.sh stop "$cp_dir" || true' EXIT
scripts/control-plane.sh start "$cp_dir" >/dev/null
set -a
# shellcheck disable=SC1091
. "$cp_dir/env"
set +a
export PATH="$CONTROL_PLANE_BIN:$PATH"  # kubectl of the server's version
echo "control plane: kube-apiserver $KUBE_VERSION" >&2

step "soak (report in $out)"
mkdir -p "$out"
"$target/debug/kube-wasm-soak" \
  --kubeconfig "$KUBECONFIG" \
  --control-plane-dir "$cp_dir" \
  --control-plane-script "$PWD/scripts/control-plane.sh" \
  --host-shim "$target/debug/host-shim" \
  --mirror-wasm "$target/wasm32-wasip1/debug/configmap-mirror.wasm" \
  --hostile-wasm "$target/wasm32-wasip1/debug/hostile.wasm" \
  --out "$out" \
  "$@"
