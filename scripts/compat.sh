#!/usr/bin/env bash
# The compatibility run: the end-to-end and parity suites against each Kubernetes version
# pinned in control-plane/kubernetes/ (or the ones named), one control plane after another,
# and a table of server version × suite × result.
#
#   scripts/compat.sh                      # every pinned version, oldest first
#   scripts/compat.sh v1.33.13             # one version
#
# Builds what scripts/test.sh builds for those suites (debug; nothing again after a test run),
# and the host's image, then for each version builds its control plane and node from module
# sources (cached), starts them and an OCI registry on loopback, runs both suites and stops
# them. Writes the table (markdown) to
# target/compat/table.md (COMPAT_OUT to change the folder) with each run's log beside it,
# prints it, and exits 1 if any suite failed. About 25 minutes a version on 2 cores after the
# builds.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/suites.sh
. scripts/lib/suites.sh

step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

out=${COMPAT_OUT:-$PWD/target/compat}
mkdir -p "$out"
if (($#)); then
  versions=("$@")
else
  mapfile -t versions < <(find control-plane/kubernetes -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V)
fi

step "toolchain: wasm32-wasip1 target"
rustup target add wasm32-wasip1

step "control planes and nodes: build ${versions[*]} from their Go module sources, and the host's image (cached)"
for version in "${versions[@]}"; do
  KUBE_WASM_KUBE_VERSION=$version provision_suite_infra >/dev/null
done

step "build the host shim and every program natively, and the programs for wasm32-wasip1"
build_suite_programs
cargo test --workspace --no-run --test parity_harness >/dev/null

# The counts of a cargo test run's log: "passed failed".
counts() {
  awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
       END { printf "%d %d\n", p, f }' "$1"
}

# One table cell: "passed (N tests)" or "FAILED (F of N)".
cell() {
  local status=$1 log=$2 passed failed
  read -r passed failed <<<"$(counts "$log")"
  if ((status == 0)); then
    echo "passed ($passed tests)"
  else
    echo "**FAILED** ($failed of $((passed + failed)); \`$(basename "$log")\`)"
  fi
}

rows=() failed=0
for version in "${versions[@]}"; do
  step "Kubernetes $version: start a control plane and an OCI registry"
  start_suite_infra "$version"
  server=$KUBE_VERSION
  step "Kubernetes $server: end-to-end suite"
  e2e_log="$out/e2e-$server.log"
  e2e=0
  run_e2e_suite 2>&1 | tee "$e2e_log" >&2 || e2e=$?
  step "Kubernetes $server: parity suite"
  parity_log="$out/parity-$server.log"
  parity=0
  run_parity_suite 2>&1 | tee "$parity_log" >&2 || parity=$?
  stop_suite_infra
  ((e2e == 0 && parity == 0)) || failed=1
  rows+=("| $server | $(cell "$e2e" "$e2e_log") | $(cell "$parity" "$parity_log") |")
done

{
  echo "| server | end-to-end suite | parity suite |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "kube-wasm $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d), etcd $(find control-plane/etcd -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V | tail -n 1), $(nproc) cores."
} >"$out/table.md"
step "done: $out/table.md"
cat "$out/table.md"
exit "$failed"
