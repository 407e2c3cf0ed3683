#!/usr/bin/env bash
# The benchmark command (not part of the test command): the same controller
# (bench/ring-controller) natively with kube-rs 5.0 and as wasm modules in the host shim,
# side by side against one real kube-apiserver started here, in one run. Writes
# target/bench/report.md, report.json and PNG plots (BENCH_OUT to change the folder), and the
# same report into the book (docs/src/benchmarks/): commit it with the change it measures.
#
#   scripts/bench.sh [--quick] [kube-wasm-bench options…]   (scripts/bench.sh --help for them)
#   scripts/bench.sh --go       # only the Go workload (issue #43) and the Go fleet's memory
#                               # budgets (--go-budget-n, root): writes go.md and go.json
#   scripts/bench.sh --render [--soak-report SOAK.json]   # the book's report page and plots
#                               # again from its report.json (with a soak run on its own)
#   scripts/bench.sh --soak 60m [--soak-modules 1000] …   # first the chaos soak (scripts/soak.sh)
#                               # at that size, its checks and figures then in the report
#   scripts/bench.sh --part NAME [options…]   # one stage of the whole run, for a machine that is
#                               # not free for the whole (some 4 hours on 2 cores): its report in
#                               # target/bench-parts/NAME and docs/src/benchmarks/parts/NAME.json
#       ring     the ring, churn, resume curve, levers, mixed and edge fleets, cold start,
#                replicas (about 40 minutes)
#       budget   the ring's budgets (--budget-n, default 1,10,100,1000), the idle CPU and the
#                levers judged under the budget (about 2 hours); in more than one part with a
#                label and fewer N each, e.g. --part budget-1000 --budget-n 1000 --idle-cpu-n 0
#                --budget-levers, then --part budget-small --budget-n 1,10,100
#       fleets   the edge, mixed and Go fleets' budgets (about 1 hour)
#       scale    suspended modules by the thousand (--suspended-scale-n)
#   scripts/bench.sh --merge [--soak-report SOAK.json]   # one report of the parts in
#                               # docs/src/benchmarks/parts/ into the book (each section from one
#                               # part; kube_wasm_bench::report::merge says which)
#
# Builds release binaries once: host-shim and the driver, the native ring controller (its own
# feature resolution, as a user builds it), and the ring controller and the examples for
# wasm32-wasip1; for the mixed fleet, the examples and parity scenario controllers natively
# and the parity scenario controllers for wasm32-wasip1. Provisions and starts the control plane exactly as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

if [[ ${1:-} == --render ]]; then
  cargo run --quiet --release -p kube-wasm-bench --bin kube-wasm-bench-render -- "${@:2}"
  exit 0
fi
parts_dir=docs/src/benchmarks/parts
if [[ ${1:-} == --merge ]]; then
  shopt -s nullglob
  parts=("$parts_dir"/*.json)
  ((${#parts[@]})) || { echo "bench: no part in $parts_dir (scripts/bench.sh --part NAME)" >&2; exit 2; }
  cargo run --quiet --release -p kube-wasm-bench --bin kube-wasm-bench-render -- "${@:2}" --parts "${parts[@]}"
  exit 0
fi

for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then
    cargo run --quiet --release -p kube-wasm-bench -- --help
    exit 0
  fi
done

target=${CARGO_TARGET_DIR:-$PWD/target}

# --soak DURATION, --soak-modules N and --part NAME are this script's; the rest goes to the
# driver.
soak_duration="" soak_modules=1000 part="" bench_args=()
while (($#)); do
  case $1 in
    --soak) soak_duration=$2; shift 2 ;;
    --soak-modules) soak_modules=$2; shift 2 ;;
    --part) part=$2; shift 2 ;;
    *) bench_args+=("$1"); shift ;;
  esac
done
# A part: the driver's options that leave out every other stage, before the caller's.
skip_ring=(--runs 0 --no-churn --no-resume-curve --no-levers --mixed-n 0 --cold-start-n 0 --replicas-modules 0)
# NAME is a stage, or a stage and a label (budget-1000: a stage run in more than one part).
case ${part%%-*} in
  "") part_args=() ;;
  ring) part_args=(--budget-n --edge-budget-n --mixed-budget-n --go-budget-n --idle-cpu-n 0 --budget-levers --suspended-scale-n) ;;
  budget) part_args=("${skip_ring[@]}" --edge-budget-n --mixed-budget-n --go-budget-n --suspended-scale-n) ;;
  fleets) part_args=("${skip_ring[@]}" --budget-n --idle-cpu-n 0 --budget-levers --suspended-scale-n) ;;
  scale) part_args=("${skip_ring[@]}" --budget-n --edge-budget-n --mixed-budget-n --go-budget-n --idle-cpu-n 0 --budget-levers) ;;
  *) echo "bench: --part is ring, budget, fleets or scale (or STAGE-LABEL), not $part" >&2; exit 2 ;;
esac
set -- "${part_args[@]}" "${bench_args[@]}"
if [[ -n $part ]]; then
  out=${BENCH_OUT:-$PWD/target/bench-parts/$part} book_args=()
else
  out=${BENCH_OUT:-$PWD/target/bench} book_args=(--book docs/src/benchmarks)
fi
examples=(configmap-mirror configmap-generator finalizer-controller store-reader multi-watch)

step "toolchain: wasm32-wasip1 target"
rustup target add wasm32-wasip1

step "control plane: build kube-apiserver, kubectl and etcd from their Go module sources (about 4 minutes the first time, then cached)"
scripts/control-plane.sh provision >/dev/null

step "release builds: host shim and driver; native ring controller; wasm32-wasip1 modules"
# The host alone, as it ships: built with the driver, it would get the driver's features of
# tokio, kube and k8s-openapi, and other code.
cargo build --release -p host-shim
cargo build --release -p kube-wasm-bench
cargo build --release -p ring-controller
wasm_pkgs=(-p ring-controller)
for example in "${examples[@]}"; do wasm_pkgs+=(-p "$example"); done
cargo build --release --target wasm32-wasip1 "${wasm_pkgs[@]}"
# The mixed and edge fleets: every kind natively too (the examples and the parity scenario
# controllers; the ring controller is built above), the combined native process linking them
# all (bench/combined-native), and the parity scenarios for wasm32.
# The Go workload alone (--go) needs the examples natively, not the parity scenarios.
go_only=false
for arg in "$@"; do [[ $arg == --go ]] && go_only=true; done
if $go_only; then native_pkgs=(); else native_pkgs=(-p parity-scenarios -p combined-native); fi
for example in "${examples[@]}"; do native_pkgs+=(-p "$example"); done
cargo build --release --bins "${native_pkgs[@]}"
$go_only || cargo build --release --target wasm32-wasip1 --bins -p parity-scenarios

step "Go: examples/go-configmap-mirror natively and as a reactor module (scripts/go.sh's caches)"
(
  cd examples/go-configmap-mirror
  export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
  export GOCACHE="$HOME/.cache/kube-wasm/go-build" GOMODCACHE="$HOME/.cache/kube-wasm/go-mod"
  go build -o "$target/release/go-configmap-mirror" .
  mkdir -p "$target/wasm32-wasip1/release"
  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$target/wasm32-wasip1/release/go-configmap-mirror.wasm" .
)

soak_args=()
if [[ -n $soak_duration ]]; then
  step "the chaos soak: $soak_modules modules for $soak_duration (scripts/soak.sh; its own control plane and debug builds)"
  rm -f "$out/soak/report.json"
  SOAK_OUT="$out/soak" scripts/soak.sh --duration "$soak_duration" --modules "$soak_modules" \
    --converge-timeout 600s || echo "soak: exit $? (its report says which check failed)" >&2
  [[ -f $out/soak/report.json ]] && soak_args=(--soak-report "$out/soak/report.json")
fi

step "start a control plane"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-bench-cp.XXXXXX")
trap 'scripts/control-plane.sh stop "$cp_dir" || true' EXIT
scripts/control-plane.sh start "$cp_dir" >/dev/null
set -a
# shellcheck disable=SC1091
. "$cp_dir/env"
set +a
export PATH="$CONTROL_PLANE_BIN:$PATH"  # kubectl of the server's version
echo "control plane: kube-apiserver $KUBE_VERSION" >&2

step "benchmark (report in $out)"
example_args=()
for example in "${examples[@]}"; do
  example_args+=(--example-wasm "$target/wasm32-wasip1/release/$example.wasm")
done
"$target/release/kube-wasm-bench" \
  --kubeconfig "$KUBECONFIG" \
  --audit-log "$AUDIT_LOG" \
  --host-shim "$target/release/host-shim" \
  --ring-native "$target/release/ring-controller" \
  --ring-wasm "$target/wasm32-wasip1/release/ring-controller.wasm" \
  "${example_args[@]}" \
  --native-dir "$target/release" \
  --wasm-dir "$target/wasm32-wasip1/release" \
  --go-native "$target/release/go-configmap-mirror" \
  --go-wasm "$target/wasm32-wasip1/release/go-configmap-mirror.wasm" \
  --out "$out" \
  "${book_args[@]}" \
  "${soak_args[@]}" \
  "$@"
if [[ -n $part ]]; then
  mkdir -p "$parts_dir"
  cp "$out/report.json" "$parts_dir/$part.json"
  echo "bench: part $part in $parts_dir/$part.json (scripts/bench.sh --merge: the book's report of the parts)" >&2
elif ! $go_only; then
  # The book's report is this whole run's now, not a merge of parts.
  rm -rf "$parts_dir"
fi
